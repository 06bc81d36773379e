#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS) against BASELINE on each test set, with
# every reference it has -> WORKDIR/results/compare/NAME/ (compare_big/ with MODEL_SIZE=big;
# docs/compare.md), then one table of every test set and their average, as the paper lays it out
# -> WORKDIR/results/compare/test_sets.md (printed).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_compare
