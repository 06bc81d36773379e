#!/usr/bin/env bash
# Step 6: training as ../wmt14_en_de/06_train.sh (Vaswani et al.'s settings: 8 GPUs x 4096
# tokens, --update-freq ceil(8/GPUS) on fewer, Adam (0.9, 0.98, eps 1e-9), inverse square root
# schedule, 4000 warm-up updates, label smoothing 0.1, shared embeddings, fp16 on GPU); a
# checkpoint every 10,000 updates as the paper, the last AVG_N (5) kept for step 7.
#   base: lr 7e-4, dropout 0.1, 100k updates; big: lr 5e-4, dropout 0.3, 300k updates.
#   (The paper trained 500k updates of 4096 tokens on one GPU: MAX_UPDATE=500000 GPUS=1
#   PAPER_GPUS=1 is its schedule, with its 16,000 warm-up updates: WARMUP=16000.)
#   SYSTEM picks the system (python -m fairseq_mgsa.systems lists them), MODEL_SIZE=base|big its size.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
paper_batch   # every GPU, and --update-freq keeping the paper's batch (../common/system_steps.sh)
run_train
