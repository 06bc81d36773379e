#!/usr/bin/env bash
# Step 6: training on one GPU with fairseq's IWSLT14 settings: transformer_iwslt_de_en sizes
# (d 512, ffn 1024, 4 heads, 6+6 layers), 4096 tokens a batch, Adam (0.9, 0.98), lr 5e-4 with
# 4000 warm-up updates (inverse square root), dropout 0.3, weight decay 1e-4, label smoothing 0.1,
# shared embeddings (joined dictionary). SYSTEM picks the system (fairseq_mgsa/systems.py, at its
# iwslt size; `python -m fairseq_mgsa.systems` lists them): by default the paper's full MG-SA in
# encoder layer 1, one head per granularity (word + the top 3 tree levels), SANs composition,
# ON-LSTM interaction, phrase-tag loss weight 0.001. A checkpoint every SAVE_INTERVAL_UPDATES
# updates, the last AVG_N kept (step 7 averages them). Stopped and rerun, fairseq resumes from
# checkpoint_last.pt.
#   The baseline, same settings: SYSTEM=transformer (run_all.sh trains both).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
one_gpu   # one GPU when there is one (0: CPU, with FAIRSEQ_EXTRA=--cpu)
run_train
