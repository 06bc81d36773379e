#!/usr/bin/env bash
# Installs fairseq-mgsa and everything it needs into the current Python environment.
#
# fairseq is built from source by pip in an isolated build environment that asks for
# torch; unconstrained, pip would fetch the newest torch build there (several GB) and
# compile fairseq against a torch other than the one it runs with. So: torch first,
# then the rest with torch pinned to the installed version.
#
# By default every package is held at the version the test suite passed with
# (requirements/lock-py<X.Y>.txt, as pip constraints), so an install next year gets the
# tested set; where no lock exists for this Python, the install floats and says so.
#
#   FLOAT=1      ignore the lock: the newest versions setup.py allows (0, the default: use it)
#   TORCH_SPEC   what to install when torch is missing (default: the lock's torch, else torch==2.13.0)
#   EDITABLE=1   install in development mode (pip install -e) (0, the default: a normal install)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# on NAME: true when the switch NAME is 1, false when it is 0 or unset, as every switch of the
# project; anything else stops here, before any install
on() {
  case "${!1:-0}" in
    1) return 0 ;;
    0) return 1 ;;
    *) echo "install.sh: error: $1 must be 0 (off) or 1 (on) (got '${!1}')" >&2; exit 1 ;;
  esac
}
on FLOAT || true
on EDITABLE || true

pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# "3.11,3.12": the Pythons a lock file was made for
tested_pythons() {
  local f out=
  for f in requirements/lock-py*.txt; do f=${f#requirements/lock-py}; out+=${out:+,}${f%.txt}; done
  echo "$out"
}
lock=requirements/lock-py${pyver}.txt
if on FLOAT; then
  echo "[install] FLOAT=1: not using the lock file; the newest versions setup.py allows"
  lock=
elif [ ! -f "$lock" ]; then
  echo "[install] no lock file for Python ${pyver} (tested: $(tested_pythons)): the newest versions setup.py allows"
  lock=
fi
lock_torch=$([ -n "$lock" ] && sed -n 's/^torch==//p' "$lock" || true)

if ! "$PY" -c "import torch" 2>/dev/null; then
  spec=${TORCH_SPEC:-torch==${lock_torch:-2.13.0}}
  echo "[install] torch not found: installing ${spec}"
  "$PY" -m pip install -q "$spec"
fi
# the installed distribution's version, which pip's constraint must match: PyPI's CUDA wheels
# report torch.__version__ 2.X.Y+cu130 while their metadata (what pip compares) says 2.X.Y
torch_version=$("$PY" -c "import importlib.metadata as m; print(m.version('torch'))")
if [ -n "$lock_torch" ] && [ "${torch_version%%+*}" != "$lock_torch" ]; then
  echo "[install] keeping the installed torch ${torch_version} (the lock was tested with ${lock_torch})"
fi
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
if [ -n "$lock" ]; then grep -v '^torch==' "$lock" > "$constraints"; fi
echo "torch==${torch_version}" >> "$constraints"

echo "[install] torch ${torch_version} pinned${lock:+, the rest at $lock}; installing fairseq-mgsa and its dependencies (fairseq builds from source: a few minutes the first time)"
if on EDITABLE; then
  PIP_CONSTRAINT="$constraints" "$PY" -m pip install -q -e ".[test]"
else
  PIP_CONSTRAINT="$constraints" "$PY" -m pip install -q ".[test]"
fi
echo "[install] done: $("$PY" -c 'import fairseq, torch; print("fairseq", fairseq.__version__, "torch", torch.__version__)' 2>/dev/null)"
