#!/usr/bin/env bash
# Step 4: joint BPE (subword-nmt, BPE_MERGES merges: 40,000 as the paper's En-Ru) learnt on the
# tokenized training text of both languages -> WORKDIR/bpe/codes.$BPE_MERGES.
# 05_preprocess.sh applies it (mgsa-preprocess --bpe-codes).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_bpe
