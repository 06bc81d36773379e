#!/usr/bin/env bash
# The whole Multi30k En-De recipe on CPU: download, tokenisation, the English parser and the
# trees, BPE, binaries, then training (RUN_JOBS runs at a time, one thread each), decoding and
# scoring for every system and seed, and the comparison table. Every step skips what is done, so
# rerunning resumes. Every variable of the steps (defaults.sh) can be set by environment:
#   bash run_all.sh                                       # everything: 6 systems, 10 runs, 2 at a time
#   SYSTEMS="transformer mgsa_syntactic" SEEDS=1 bash run_all.sh
#   SKIP_DOWNLOAD=1 RAW_DIR=/data/multi30k TREEBANK_DIR=/data/treebank bash run_all.sh
#   PARSER_DIR=/models/en-parser bash run_all.sh          # a parser trained already: no parser training
#   FROM_STEP=6 bash run_all.sh                           # start at step 6
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=defaults.sh
source "$HERE/defaults.sh"
# shellcheck source=../common/run_all.sh
source "$HERE/../common/run_all.sh"
run_recipe "$HERE"
