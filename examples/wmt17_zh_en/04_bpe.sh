#!/usr/bin/env bash
# Step 4: BPE codes (subword-nmt), BPE_MERGES merges learnt on each side's training text alone
# (SEPARATE_VOCAB=1: Chinese and English share no subwords) -> WORKDIR/bpe/codes.{zh,en}.$BPE_MERGES.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_bpe
