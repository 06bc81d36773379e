#!/usr/bin/env bash
# The whole Tatoeba Chinese-English recipe on CPU: the split, segmentation and tokenisation, the
# Sinica parser's trees, separate BPE, binaries, then training (one run at a time, one thread),
# decoding and scoring for every system and seed, and the comparison table with all references.
# Every step skips what is done, so rerunning resumes. Every variable of the steps (defaults.sh)
# can be set by environment:
#   CMN_TXT=/data/cmn.txt PARSER_DIR=/models/sinica_zh bash run_all.sh
#   SYSTEMS="transformer mgsa_ngram hysan" CMN_TXT=... bash run_all.sh     # no parser needed
#   FROM_STEP=6 bash run_all.sh                                              # start at step 6
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=defaults.sh
source "$HERE/defaults.sh"
# shellcheck source=../common/run_all.sh
source "$HERE/../common/run_all.sh"
run_recipe "$HERE"
