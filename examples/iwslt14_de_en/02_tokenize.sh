#!/usr/bin/env bash
# Step 2: Moses tokenisation (sacremoses) of RAW_DIR/{split}.{lang} into WORKDIR/tok/full/, as
# fairseq's prepare-iwslt14.sh does with the Perl scripts: no punctuation normalisation (only
# ’ -> '), no hyphen splitting, Moses escapes; then train and valid cleaned (1..MAX_LEN words,
# length ratio <= LEN_RATIO, as clean-corpus-n.perl) and everything lowercased into WORKDIR/tok/
# (the cased, cleaned text stays in WORKDIR/tok/cased/ for the parser).
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
RAW_DIR=${RAW_DIR:-$WORKDIR/raw}
WORKERS=${WORKERS:-4}                   # sacremoses processes
NORM_SPLITS=${NORM_SPLITS-}            # splits whose punctuation is normalised
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-0}   # 1: tokenizer.perl -a
LOWERCASE=${LOWERCASE:-1}
CLEAN_SPLITS=${CLEAN_SPLITS-train valid}
MAX_LEN=${MAX_LEN:-175}
LEN_RATIO=${LEN_RATIO:-1.5}

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
run_step 02_tokenize step_tokenize
