#!/usr/bin/env bash
# Step 2: Moses tokenisation (sacremoses) of RAW_DIR/{split}.{lang} into WORKDIR/tok/full/, as
# fairseq's prepare-iwslt14.sh does with the Perl scripts: no punctuation normalisation (only
# ’ -> '), no hyphen splitting, Moses escapes; then train and valid cleaned (1..MAX_LEN words,
# length ratio <= LEN_RATIO, as clean-corpus-n.perl) and everything lowercased into WORKDIR/tok/
# (the cased, cleaned text stays in WORKDIR/tok/cased/ for the parser).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
run_tokenize
