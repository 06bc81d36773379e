#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS) against BASELINE on newstest2014:
# detokenized hypotheses (results/RUN_NAME/hyp.detok) against the raw references
# -> WORKDIR/results/compare/ (compare_big/ with MODEL_SIZE=big; docs/compare.md).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_compare
