#!/usr/bin/env bash
# The default test suite (what CI runs), on every core: pytest-xdist, one worker a core
# (TEST_WORKERS to choose; 1 runs it in one process), each test file kept on one worker so that
# its module-scoped fixtures are built once. Each worker and the commands its tests start use one
# thread (OMP_NUM_THREADS), so the workers do not fight over the cores. pytest's exit code 5 (no
# tests collected) counts as a failure here: a suite that runs nothing has not passed.
#
# --fast: the fast part of the suite (what CI runs under a second Python): the default suite
# without the end-to-end files of LONG below, each of which runs whole pipelines (recipes, the
# demo, the README's quick start, the GPU check's dry run, multi-process training) for a minute
# or more (under Python 3.12 they were 660 of the suite's 1,490 test-seconds, before the quick
# recipe tests moved out of LONG; docs/testing.md).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-python3}
LONG=(
  tests/end_to_end/test_recipe_multi30k.py tests/end_to_end/test_recipe_runs.py tests/end_to_end/test_demo.py
  tests/end_to_end/test_readme.py tests/end_to_end/test_gpu_check.py tests/end_to_end/test_distributed.py
  tests/end_to_end/test_recipe_wmt16_en_ru.py tests/end_to_end/test_recipe_zh.py
)
if [ "${1:-}" = --fast ]; then
  shift
  for f in "${LONG[@]}"; do
    [ -f "$f" ] || { echo "run_tests.sh: $f (in LONG) does not exist: update the list"; exit 1; }
    set -- --ignore "$f" "$@"
  done
fi
workers=${TEST_WORKERS:-$("$PY" -c 'import os; print(os.cpu_count() or 1)')}
parallel=()
if [ "$workers" -gt 1 ]; then
  parallel=(-n "$workers" --dist loadfile)
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
fi
"$PY" -m pytest -v --durations=15 "${parallel[@]}" "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "no tests were collected"; exit 1; fi
exit $rc
