#!/usr/bin/env bash
# Step 7: translate the test split (one line a Chinese sentence) with checkpoint_best.pt (the best
# validation BLEU), beam 5, BPE removed -> WORKDIR/results/RUN_NAME/{generate-test.txt, hyp.tok}.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
one_gpu
cpu_threads
step_average_and_generate
