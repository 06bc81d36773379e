#!/usr/bin/env bash
# Step 7: translate test2016 with the checkpoint of the best validation loss (DECODE_CHECKPOINT=best;
# no averaging: a run stopped on validation keeps few checkpoints after its best), beam 5, BPE
# removed -> WORKDIR/results/RUN_NAME/{generate-test.txt, hyp.tok} (test order; their number is
# checked against the test set's). Redone only when training went on since.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
one_gpu
cpu_threads
step_average_and_generate
