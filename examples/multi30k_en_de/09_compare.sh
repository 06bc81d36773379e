#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS for MULTI_SEED_SYSTEMS, the first for the
# others) against BASELINE on test2016: detokenized hypotheses against the raw references, cased
# -> WORKDIR/results/compare/ (BLEU and chrF mean and sd, paired bootstrap p, verdicts, plots).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_compare
