#!/usr/bin/env bash
# Step 8: BLEU of WORKDIR/results/RUN_NAME/hyp.tok on newstest2014:
#   tokenized BLEU, as the paper and Vaswani et al. report it: Moses-tokenized hypotheses and
#     references, hyphenated compounds split ("a @-@ b" -> "a @ ##AT##-##AT## @ b", the
#     ##AT##-splitting of tensor2tensor's and fairseq's scripts), sacrebleu --tokenize none;
#   detokenized sacreBLEU (13a) against the raw references.
# -> WORKDIR/results/RUN_NAME/bleu.txt (and sacrebleu's JSON beside it).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_score
