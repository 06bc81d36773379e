#!/usr/bin/env bash
# Step 6: training with the paper's settings, which are Vaswani et al.'s (2017): 8 GPUs x 4096
# tokens (on fewer GPUs --update-freq ceil(8/GPUS) keeps the batch), Adam (0.9, 0.98, eps 1e-9),
# inverse square root schedule with 4000 warm-up updates, label smoothing 0.1, shared
# embeddings (joined dictionary), phrase-tag loss weight 0.001, fp16 on GPU.
#   base: lr 7e-4 (= 512^-0.5 * 4000^-0.5, Vaswani et al.'s peak), dropout 0.1, 100k updates;
#   big:  lr 5e-4 (= 1024^-0.5 * 4000^-0.5), dropout 0.3, 300k updates.
# A checkpoint every SAVE_INTERVAL_UPDATES updates, the last AVG_N kept (step 7 averages them).
# Stopped and rerun, fairseq resumes from CKPT_DIR/checkpoint_last.pt.
#   SYSTEM picks the system (fairseq_mgsa/systems.py: architecture, task, criterion; `python -m
#   fairseq_mgsa.systems` lists them), MODEL_SIZE=base|big its size and the defaults below.
#   The baseline, same settings: SYSTEM=transformer.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
paper_batch   # every GPU, and --update-freq keeping the paper's batch (../common/system_steps.sh)
run_train
