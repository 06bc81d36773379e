#!/usr/bin/env bash
# Installs fairseq-mgsa and everything it needs into the current Python environment.
#
# fairseq is built from source by pip in an isolated build environment that asks for
# torch; unconstrained, pip would fetch the newest torch build there (several GB) and
# compile fairseq against a torch other than the one it runs with. So: torch first,
# then the rest with torch pinned to the installed version.
#
#   TORCH_SPEC   what to install when torch is missing (default: torch==2.13.0)
#   EDITABLE=1   install in development mode (pip install -e)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "[install] torch not found: installing ${TORCH_SPEC:-torch==2.13.0}"
  "$PY" -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
fi
torch_version=$("$PY" -c "import torch; print(torch.__version__)")
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
echo "torch==${torch_version}" > "$constraints"

echo "[install] torch ${torch_version} pinned; installing fairseq-mgsa and its dependencies (fairseq builds from source: a few minutes the first time)"
if [ -n "${EDITABLE:-}" ]; then
  PIP_CONSTRAINT="$constraints" "$PY" -m pip install -q -e ".[test]"
else
  PIP_CONSTRAINT="$constraints" "$PY" -m pip install -q ".[test]"
fi
echo "[install] done: $("$PY" -c 'import fairseq, torch; print("fairseq", fairseq.__version__, "torch", torch.__version__)' 2>/dev/null)"
