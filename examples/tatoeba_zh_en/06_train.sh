#!/usr/bin/env bash
# Step 6: training with the CPU preset (README.md says how it was chosen): size `cpu` of the
# registry (d 128, FFN 512, 4 heads, 3+3 layers), MAX_TOKENS tokens a batch, Adam (0.9, 0.98), lr
# LR after WARMUP warm-up updates (inverse square root), dropout, weight decay, label smoothing
# 0.1; separate source and target embeddings, the decoder's input and output shared. Stopped on
# validation BLEU (greedy; fairseq_mgsa/analysis/compare/stopping.py) after PATIENCE validations,
# one every VALID_INTERVAL updates, without a new best, or at MAX_UPDATE (the cap). One thread.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
one_gpu
cpu_threads
run_train
