#!/usr/bin/env bash
# Step 2: the Chinese side segmented into words by mgsa-segment-zh (jieba; Traditional characters
# made Simplified first, ZH_T2S=1), once: BPE, the parser and the trees' leaves all read these
# words; the English side Moses-tokenized (sacremoses), cased, punctuation normalised -> WORKDIR/tok/.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_tokenize
