#!/usr/bin/env bash
# Step 7: average the last AVG_N (5) checkpoints, translate newstest2014 with beam 5 and length
# penalty 0.6 (the paper's), BPE removed -> WORKDIR/results/RUN_NAME/{generate-test.txt, hyp.tok}
# (Moses-tokenized, in test order; their number is checked against the test set's).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_average_and_generate
