#!/usr/bin/env bash
# Step 8: BLEU of WORKDIR/results/RUN_NAME/hyp.tok on the test set:
#   tokenized, lowercased BLEU (the usual IWSLT14 figure, what fairseq-generate prints):
#     sacrebleu --tokenize none on the Moses tokens;
#   detokenized sacreBLEU (13a, lowercased) against the raw references.
# -> WORKDIR/results/RUN_NAME/bleu.txt (and sacrebleu's JSON beside it).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_score
