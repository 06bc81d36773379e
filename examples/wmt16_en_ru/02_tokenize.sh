#!/usr/bin/env bash
# Step 2: Moses tokenisation (sacremoses, each side with its own language: -l en, -l ru) of
# RAW_DIR/{split}.{lang} into WORKDIR/tok/full/: punctuation normalised and control characters
# removed (train and valid; the test set only gets ’ -> '), hyphens split ("a-b" -> "a @-@ b"),
# Moses escapes. Then the training pairs are cleaned (1..MAX_LEN words, length ratio <= LEN_RATIO,
# as clean-corpus-n.perl) into WORKDIR/tok/; valid and test stay whole. Cased (LOWERCASE=0).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_tokenize
