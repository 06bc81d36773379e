#!/usr/bin/env bash
# Step 7: average the last AVG_N checkpoints (5 base, 20 big, as Vaswani et al.), translate
# newstest2014 with beam 4 and length penalty 0.6, BPE removed -> WORKDIR/results/RUN_NAME/
# {generate-test.txt, hyp.tok} (hypotheses in test order, Moses-tokenized; their number is
# checked against the test set's). Redone only when training went on since.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_average_and_generate
