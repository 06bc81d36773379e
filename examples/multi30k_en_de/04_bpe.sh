#!/usr/bin/env bash
# Step 4: joint BPE (subword-nmt, BPE_MERGES merges: 8,000, defaults.sh says why) learnt on the
# tokenized training text of both languages -> WORKDIR/bpe/codes.$BPE_MERGES.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_bpe
