#!/usr/bin/env bash
# The test suite on every core: pytest-xdist, one worker a core (TEST_WORKERS to choose; 1 runs it
# in one process), each test file kept on one worker so that its module-scoped fixtures are built
# once. Each worker and the commands its tests start use one thread (OMP_NUM_THREADS), so the
# workers do not fight over the cores. pytest's exit code 5 (no tests collected) counts as a
# failure here: a suite that runs nothing has not passed.
#
#   bash scripts/run_tests.sh            the default suite (`make test`): pytest.ini leaves out the
#                                        markers slow and long
#   bash scripts/run_tests.sh -m long    the whole pipelines (`make test-long`; docs/testing.md)
#
# Other arguments go to pytest as they are.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-python3}
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
