#!/usr/bin/env bash
# Step 4: joint BPE (subword-nmt, BPE_MERGES merges: 10k as fairseq's IWSLT14 recipe) learnt on
# the tokenized training text of both languages -> WORKDIR/bpe/codes.$BPE_MERGES.
# 05_preprocess.sh applies it (mgsa-preprocess --bpe-codes).
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
BPE_MERGES=${BPE_MERGES:-10000}

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
run_step "04_bpe.$BPE_MERGES" step_bpe
