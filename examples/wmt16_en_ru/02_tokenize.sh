#!/usr/bin/env bash
# Step 2: Moses tokenisation (sacremoses, each side with its own language: -l en, -l ru) of
# RAW_DIR/{split}.{lang} into WORKDIR/tok/full/, every split alike: no punctuation normalised
# (NORM_SPLITS empty; set, it names every split), hyphens split ("a-b" -> "a @-@ b"). The Russian
# side through mgsa_preprocess.moses_ru: no escapes, O'Neil, 2:1, 19:30 kept whole, so that step 08
# detokenizes it back into the raw text; the English side with Moses escapes, ’ -> '. Then the
# training pairs are cleaned (1..MAX_LEN words, length ratio <= LEN_RATIO, as clean-corpus-n.perl)
# into WORKDIR/tok/; valid and test stay whole. Cased (LOWERCASE=0).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_tokenize
