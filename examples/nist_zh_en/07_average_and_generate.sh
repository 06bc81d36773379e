#!/usr/bin/env bash
# Step 7: average the last AVG_N checkpoints (DECODE_CHECKPOINT=best: the best on validation
# instead) and translate each test set of TEST_SETS, MT03-MT06 (RAW_DIR/mt03 ... mt06, four references each), with beam BEAM and length penalty
# LENPEN, BPE removed -> WORKDIR/results/RUN_NAME/NAME/{generate-test.txt, hyp.tok} (in test
# order; their number checked against the test set's). Redone only when training went on since.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
every_gpu
cpu_threads
step_average_and_generate
