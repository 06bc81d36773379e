#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS for MULTI_SEED_SYSTEMS) against BASELINE
# on the test split, detokenized hypotheses against every English translation of each sentence
# (--refs-tsv RAW_DIR/test.refs.tsv: a sentence with fewer translations has empty fields, which
# sacrebleu leaves out) -> WORKDIR/results/compare/; then every run's stopping record.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
read -r -a names <<< "$SYSTEMS"
need_files "$RAW_DIR/test.refs.tsv"
args=() logs=()
for name in "${names[@]}"; do
  dirs=""
  for seed in $(seeds_of "$name"); do
    run=$(run_name "$name" "$seed")
    need_files "$WORKDIR/results/$run/hyp.detok"
    dirs+="${dirs:+,}$WORKDIR/results/$run"
    logs+=("$WORKDIR/checkpoints/$run/train.log")
  done
  args+=(--system "$name=$dirs")
done
baseline=${BASELINE:-transformer}
[[ " ${names[*]} " == *" $baseline "* ]] || baseline=${names[0]}
mkdir -p "$WORKDIR/results/compare"
if [ "${#names[@]}" -ge 2 ]; then
  log "comparing ${names[*]} (seeds $SEEDS) against $baseline, all references of $RAW_DIR/test.refs.tsv -> $WORKDIR/results/compare"
  python -m fairseq_mgsa.analysis.compare --refs-tsv "$RAW_DIR/test.refs.tsv" "${args[@]}" --baseline "$baseline" \
    --out "$WORKDIR/results/compare"
fi
python -m fairseq_mgsa.analysis.compare.stopping summary "${logs[@]}" | tee "$WORKDIR/results/compare/stopping.txt"
