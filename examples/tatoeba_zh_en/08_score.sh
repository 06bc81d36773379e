#!/usr/bin/env bash
# Step 8: BLEU and chrF of WORKDIR/results/RUN_NAME/hyp.tok, detokenized (sacremoses), against every
# English translation of each test sentence (RAW_DIR/test.refs.tsv; score_refs.py) -> results/RUN_NAME/bleu.txt;
# then where the run stopped and why (fairseq_mgsa/analysis/compare/stopping.py) -> results/RUN_NAME/stopping.txt.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
out=$WORKDIR/results/$RUN_NAME
need sacremoses "pip install sacremoses"
need_files "$out/hyp.tok" "$RAW_DIR/test.refs.tsv"
sacremoses -l "$TGT" -q detokenize < "$out/hyp.tok" > "$out/hyp.detok"
python "$(dirname "${BASH_SOURCE[0]}")/score_refs.py" --refs-tsv "$RAW_DIR/test.refs.tsv" --hyp "$out/hyp.detok" \
  --run "$RUN_NAME (system $SYSTEM, seed $SEED)" > "$out/bleu.txt.partial"
mv "$out/bleu.txt.partial" "$out/bleu.txt"
cat "$out/bleu.txt"
python -m fairseq_mgsa.analysis.compare.stopping summary "$CKPT_DIR/train.log" | tee "$out/stopping.txt"
