#!/usr/bin/env bash
# Step 8: BLEU of WORKDIR/results/RUN_NAME/hyp.tok on test2016: detokenized sacreBLEU (13a, cased)
# against the raw references, the figure of the table; tokenized BLEU beside it
# -> WORKDIR/results/RUN_NAME/bleu.txt (and sacrebleu's JSON); then where the run stopped and
# why (fairseq_mgsa/analysis/compare/stopping.py, from its train.log) -> results/RUN_NAME/stopping.txt.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_score
python -m fairseq_mgsa.analysis.compare.stopping summary "$CKPT_DIR/train.log" | tee "$WORKDIR/results/$RUN_NAME/stopping.txt"
