#!/usr/bin/env bash
# The whole WMT16 English-Russian recipe, steps 1 to 9; every step skips what is done, so
# rerunning resumes. Every variable of the steps can be set by environment, e.g.
#   bash run_all.sh                                      # en-ru: the Transformer and syntactic MG-SA
#   DIRECTION=ru-en bash run_all.sh                      # Russian source: the Transformer and n-gram MG-SA
#   YANDEX_DIR=/data/1mcorpus UN_DIR=/data/un/en-ru bash run_all.sh   # the registered corpora too (the paper's data)
#   SYSTEMS="transformer pba_heterogeneous_convkv pba_interleaved_queryk" bash run_all.sh   # the paper's rows
#   MODEL_SIZE=big bash run_all.sh
#   SKIP_DOWNLOAD=1 RAW_DIR=/data/wmt16_en_ru bash run_all.sh   # raw text already there
#   FROM_STEP=6 bash run_all.sh                          # start at step 6
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=defaults.sh
source "$HERE/defaults.sh"
# shellcheck source=../common/run_all.sh
source "$HERE/../common/run_all.sh"
run_recipe "$HERE"
