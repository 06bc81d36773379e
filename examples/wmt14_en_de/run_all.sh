#!/usr/bin/env bash
# The whole WMT14 En-De recipe, steps 1 to 8; every step skips what is done, so rerunning
# resumes. Every variable of the steps can be set by environment, e.g.
#   GPUS=4 bash run_all.sh                               # update-freq 2: the paper's batch
#   MODEL_SIZE=big bash run_all.sh                       # Transformer-Big + MG-SA
#   SYSTEMS="transformer mgsa_syntactic" bash run_all.sh # baseline and MG-SA (python -m fairseq_mgsa.systems lists them)
#   SKIP_DOWNLOAD=1 RAW_DIR=/data/wmt14 bash run_all.sh  # raw text already there
#   SYSTEMS="transformer mgsa_syntactic hysan" SEEDS="1 2 3" bash run_all.sh   # 3 seeds each, then the table
#   FROM_STEP=6 bash run_all.sh                          # start at step 6
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=defaults.sh
source "$HERE/defaults.sh"
# shellcheck source=../common/run_all.sh
source "$HERE/../common/run_all.sh"
run_recipe "$HERE"
