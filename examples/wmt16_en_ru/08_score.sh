#!/usr/bin/env bash
# Step 8: BLEU of WORKDIR/results/RUN_NAME/hyp.tok on newstest2014, cased: tokenized BLEU (the
# Moses tokens of hypotheses and references, sacrebleu --tokenize none; no compound splitting,
# COMPOUND_SPLIT=0, an En-De convention) and detokenized sacreBLEU (13a) against the raw
# references, the hypotheses detokenized (Russian: mgsa_preprocess.moses_ru detokenize, which
# gives step 02's tokens of the raw text back as that text; English: sacremoses -l en)
# -> results/RUN_NAME/bleu.txt.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
step_score
