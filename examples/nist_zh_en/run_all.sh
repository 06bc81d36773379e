#!/usr/bin/env bash
# The whole NIST Chinese-English recipe, steps 1 to 9; every step skips what is done, so rerunning
# resumes. Every variable of the steps can be set by environment (README.md lists them), e.g.
#   SYSTEMS="transformer mgsa_syntactic hysan" SEEDS="1 2 3" bash run_all.sh   # 3 seeds each, then the tables
#   MODEL_SIZE=big bash run_all.sh
#   PARSER=treebank PARSER_TRAIN_TREES=... PARSER_DEV_TREES=... bash run_all.sh   # a parser trained on your treebank
#   FROM_STEP=6 bash run_all.sh                          # start at step 6
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=defaults.sh
source "$HERE/defaults.sh"
# shellcheck source=../common/run_all.sh
source "$HERE/../common/run_all.sh"
run_recipe "$HERE"
