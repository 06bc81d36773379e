#!/usr/bin/env bash
# Step 8: for each test set, detokenized sacreBLEU (13a, cased) and, beside it, BLEU on the Moses tokens
# -> WORKDIR/results/RUN_NAME/NAME/bleu.txt (and sacrebleu's JSON beside it).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_score
