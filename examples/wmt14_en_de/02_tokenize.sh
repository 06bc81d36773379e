#!/usr/bin/env bash
# Step 2: Moses tokenisation (sacremoses) of RAW_DIR/{split}.{lang} into WORKDIR/tok/full/, as
# fairseq's prepare-wmt14en2de.sh does with the Perl scripts: punctuation normalised and
# control characters removed (train and valid; the test set only gets ’ -> '), hyphens split
# ("a-b" -> "a @-@ b"), Moses escapes. Then the training pairs are cleaned (1..MAX_LEN words,
# length ratio <= LEN_RATIO, as clean-corpus-n.perl) into WORKDIR/tok/; valid and test stay whole.
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
RAW_DIR=${RAW_DIR:-$WORKDIR/raw}
SRC=${SRC:-en}
TGT=${TGT:-de}
WORKERS=${WORKERS:-8}                  # sacremoses processes
NORM_SPLITS=${NORM_SPLITS-train valid} # splits whose punctuation is normalised
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-1}  # 1: tokenizer.perl -a
LOWERCASE=${LOWERCASE:-0}
CLEAN_SPLITS=${CLEAN_SPLITS-train}
MAX_LEN=${MAX_LEN:-250}
LEN_RATIO=${LEN_RATIO:-1.5}

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
run_step 02_tokenize step_tokenize
