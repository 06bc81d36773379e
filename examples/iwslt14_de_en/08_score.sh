#!/usr/bin/env bash
# Step 8: BLEU of WORKDIR/results/RUN_NAME/hyp.tok on the test set:
#   tokenized, lowercased BLEU (the usual IWSLT14 figure, what fairseq-generate prints):
#     sacrebleu --tokenize none on the Moses tokens;
#   detokenized sacreBLEU (13a, lowercased) against the raw references.
# -> WORKDIR/results/RUN_NAME/bleu.txt (and sacrebleu's JSON beside it).
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
RAW_DIR=${RAW_DIR:-$WORKDIR/raw}
LOWERCASE=${LOWERCASE:-1}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}   # 1: split hyphenated compounds (##AT##) first, as for WMT En-De
SYSTEM=${SYSTEM:-mgsa_syntactic}
RUN_NAME=${RUN_NAME:-$SYSTEM}

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
step_score
