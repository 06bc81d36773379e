#!/usr/bin/env bash
# Step 6: training with the CPU preset (README.md says how it was chosen): size `cpu` of the
# registry (d 128, FFN 512, 4 heads, 3+3 layers), MAX_TOKENS tokens a batch, Adam (0.9, 0.98), lr
# LR after WARMUP warm-up updates (inverse square root), dropout, weight decay, label smoothing
# 0.1, shared embeddings. Stopped on validation (fairseq_mgsa/analysis/compare/stopping.py): after PATIENCE
# validations, one every VALID_INTERVAL updates, without a lower validation loss, or at
# MAX_UPDATE (the cap); checkpoint_best.pt is the one step 7 decodes. On a machine without a GPU
# one thread a run (THREADS), so that two runs share 2 cores. Stopped and rerun, fairseq resumes
# from checkpoint_last.pt. SYSTEM picks the system (`python -m fairseq_mgsa.systems` lists them).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
one_gpu   # one GPU when there is one, else the CPU
cpu_threads
run_train
