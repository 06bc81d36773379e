#!/usr/bin/env bash
# The wheels that put the project on a GPU machine without network (docs/gpu.md), into .whl/
# (ignored by git; about 22 MB): for a machine whose Python 3.12 has a CUDA build of torch and the
# common scientific packages (numpy, scipy, scikit-learn, matplotlib, sacrebleu, PyYAML, tqdm,
# click, joblib: the GPU machines of docs/gpu.md), what the GPU check imports beyond them, as cp312
# wheels at the versions of requirements/lock-py3.12.txt, plus the project's own wheel and
# antlr4-python3-runtime's (an sdist only on the registry: built here, pure Python). On the GPU
# machine, from the checkout:
#
#   PY=$(python3 -c 'import sys; print(sys.executable)')    # the venv's own path
#   "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site PYTHON="$PY" bash scripts/gpu_check.sh
#
# Run here with network:  bash scripts/gpu_wheels.sh   (PYTHON: a Python with pip, any version)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOCK=requirements/lock-py3.12.txt
DEST=.whl

# fairseq, what it imports that such a machine lacks, and the project's own imports on the check's
# path (found by rehearsing the install in a bare venv: docs/gpu.md); pytest and what it imports
# (the check's phases are tests: tests/gpu/check); none of the machine's own packages, which a
# copy in --target would shadow
PACKAGES=(fairseq-fixed hydra-core omegaconf bitarray sacremoses subword-nmt pytest pluggy iniconfig Pygments)
SDIST_ONLY=(antlr4-python3-runtime)

version() {
  local v
  v=$(grep -i "^$1==" "$LOCK" | head -n 1 | cut -d= -f3)
  [ -n "$v" ] || { echo "gpu_wheels.sh: $1 is not in $LOCK" >&2; exit 1; }
  echo "$v"
}

specs=()
for p in "${PACKAGES[@]}"; do specs+=("$p==$(version "$p")"); done
rm -rf "$DEST"
mkdir -p "$DEST"
echo "[gpu-wheels] downloading ${#specs[@]} cp312 wheels into $DEST/"
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --dest "$DEST" \
  --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any "${specs[@]}"
for p in "${SDIST_ONLY[@]}"; do
  echo "[gpu-wheels] building $p==$(version "$p") (an sdist only)"
  "$PY" -m pip wheel --quiet --no-deps --wheel-dir "$DEST" "$p==$(version "$p")"
done
echo "[gpu-wheels] building the project's wheel"
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$DEST" .
ls -1 "$DEST"
echo "[gpu-wheels] $(du -sh "$DEST" | cut -f1) in $DEST/ ($(find "$DEST" -maxdepth 1 -name '*.whl' | wc -l) wheels)"
