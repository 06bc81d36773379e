#!/usr/bin/env bash
# Step 4: joint BPE (subword-nmt, BPE_MERGES merges: 32k as in the paper) learnt on the
# tokenized training text of both languages -> WORKDIR/bpe/codes.$BPE_MERGES.
# 05_preprocess.sh applies it (mgsa-preprocess --bpe-codes).
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
SRC=${SRC:-en}
TGT=${TGT:-de}
BPE_MERGES=${BPE_MERGES:-32000}

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
run_step "04_bpe.$BPE_MERGES" step_bpe
