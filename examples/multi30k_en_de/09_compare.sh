#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS for MULTI_SEED_SYSTEMS, the first for the
# others) against BASELINE on test2016: detokenized hypotheses against the raw references, cased
# -> WORKDIR/results/compare/ (BLEU and chrF mean and sd, paired bootstrap p, verdicts, plots);
# then every run's stopping record (fairseq_mgsa/analysis/compare/stopping.py) -> results/compare/stopping.txt.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_compare
logs=()
for system in $SYSTEMS; do
  for seed in $(seeds_of "$system"); do logs+=("$WORKDIR/checkpoints/$(run_name "$system" "$seed")/train.log"); done
done
need_files "${logs[@]}"
mkdir -p "$WORKDIR/results/compare"
python -m fairseq_mgsa.analysis.compare.stopping summary "${logs[@]}" | tee "$WORKDIR/results/compare/stopping.txt"
