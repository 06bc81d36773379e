#!/usr/bin/env bash
# Step 8: BLEU of WORKDIR/results/RUN_NAME/hyp.tok on newstest2014:
#   tokenized BLEU, as the paper and Vaswani et al. report it: Moses-tokenized hypotheses and
#     references, hyphenated compounds split ("a @-@ b" -> "a @ ##AT##-##AT## @ b", the
#     ##AT##-splitting of tensor2tensor's and fairseq's scripts), sacrebleu --tokenize none;
#   detokenized sacreBLEU (13a) against the raw references.
# -> WORKDIR/results/RUN_NAME/bleu.txt (and sacrebleu's JSON beside it).
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
RAW_DIR=${RAW_DIR:-$WORKDIR/raw}
TGT=${TGT:-de}
LOWERCASE=${LOWERCASE:-0}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-1}
MODEL_SIZE=${MODEL_SIZE:-base}
SYSTEM=${SYSTEM:-mgsa_syntactic}
if [ "$MODEL_SIZE" = big ]; then RUN_NAME=${RUN_NAME:-${SYSTEM}_big}; else RUN_NAME=${RUN_NAME:-$SYSTEM}; fi

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
step_score
