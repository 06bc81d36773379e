#!/usr/bin/env bash
# Step 7: average the last AVG_N checkpoints, translate the test set with beam 5 (fairseq's
# IWSLT14 setting), BPE removed -> WORKDIR/results/RUN_NAME/{generate-test.txt, hyp.tok}
# (hypotheses in test order, tokenized and lowercased; their number is checked against the
# test set's). Redone only when training went on since.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_average_and_generate
