#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS) against BASELINE on the test set:
# detokenized hypotheses (results/RUN_NAME/hyp.detok) against the raw references, lowercased
# with LOWERCASE=1 (the recipe's default) -> WORKDIR/results/compare/ (docs/compare.md).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_compare
