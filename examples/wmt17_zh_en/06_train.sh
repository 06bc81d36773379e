#!/usr/bin/env bash
# Step 6: training with Vaswani et al.'s (2017) settings, as for WMT14: 8 GPUs x 4096 tokens
# (on fewer GPUs --update-freq ceil(8/GPUS) keeps the batch), Adam (0.9, 0.98, eps 1e-9), inverse square root
# schedule with WARMUP warm-up updates, label smoothing 0.1, the decoder's input and output
# embeddings shared (a dictionary per side), phrase-tag loss weight 0.001 for MG-SA, fp16 on GPU.
# MODEL_SIZE and its defaults: defaults.sh. A checkpoint every SAVE_INTERVAL_UPDATES updates, the last
# AVG_N kept (step 7 averages them). Stopped and rerun, fairseq resumes from CKPT_DIR/checkpoint_last.pt.
# SYSTEM picks the system (`python -m fairseq_mgsa.systems` lists them); the baseline: SYSTEM=transformer.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
paper_batch   # every GPU, and --update-freq keeping the paper's batch (../common/system_steps.sh)
cpu_threads
run_train
