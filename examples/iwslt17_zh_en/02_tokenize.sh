#!/usr/bin/env bash
# Step 2: the Chinese side of RAW_DIR/{split}.zh segmented into words by mgsa-segment-zh (jieba;
# ZH_T2S=1: Traditional characters made Simplified first; ZH_USER_DICT: your dictionary), once:
# BPE, the parser and the trees' leaves all read these words. No English-only step touches it (no
# Moses escaping, no PTB quotes, no lowercasing). The English side Moses-tokenized (sacremoses),
# cased; the training pairs cleaned (1..MAX_LEN words, ratio <= LEN_RATIO) into WORKDIR/tok/.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_tokenize
