#!/usr/bin/env bash
# The whole IWSLT14 recipe, steps 1 to 8, for the baseline and MG-SA (SYSTEMS); every step skips
# what is done, so rerunning resumes. Every variable of the steps can be set by environment:
#   bash run_all.sh                                     # de-en: German source, parsed in German
#   DIRECTION=en-de bash run_all.sh                     # English source, parsed in English
#   SYSTEMS=mgsa_syntactic bash run_all.sh              # MG-SA only (python -m fairseq_mgsa.systems lists them)
#   SKIP_DOWNLOAD=1 RAW_DIR=/data/iwslt14 bash run_all.sh
#   SYSTEMS="transformer mgsa_syntactic hysan" SEEDS="1 2 3" bash run_all.sh   # 3 seeds each, then the table
#   FROM_STEP=6 bash run_all.sh                         # start at step 6
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=defaults.sh
source "$HERE/defaults.sh"
# shellcheck source=../common/run_all.sh
source "$HERE/../common/run_all.sh"
run_recipe "$HERE"
