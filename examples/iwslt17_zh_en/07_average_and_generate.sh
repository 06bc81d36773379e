#!/usr/bin/env bash
# Step 7: average the last AVG_N checkpoints (DECODE_CHECKPOINT=best: the best on validation
# instead) and translate each test set of TEST_SETS, tst2016 and tst2017 (RAW_DIR/tst2016, tst2017), with beam BEAM and length penalty
# LENPEN, BPE removed -> WORKDIR/results/RUN_NAME/NAME/{generate-test.txt, hyp.tok} (in test
# order; their number checked against the test set's). Redone only when training went on since.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
every_gpu
cpu_threads
step_average_and_generate
