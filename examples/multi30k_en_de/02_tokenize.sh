#!/usr/bin/env bash
# Step 2: Moses tokenisation (sacremoses) of RAW_DIR/{split}.{en,de} into WORKDIR/tok/: cased,
# punctuation normalised, no hyphen splitting, Moses escapes; no cleaning (defaults.sh says why).
# The English side is what the parser reads (step 3) and what its word vectors learn from.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_tokenize
