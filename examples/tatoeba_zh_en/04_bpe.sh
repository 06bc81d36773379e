#!/usr/bin/env bash
# Step 4: BPE (subword-nmt) learnt on each side's training text alone, BPE_MERGES merges each
# (SEPARATE_VOCAB=1) -> WORKDIR/bpe/codes.{zh,en}.$BPE_MERGES.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_bpe
