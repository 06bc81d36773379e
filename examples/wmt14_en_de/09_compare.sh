#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS) against BASELINE on newstest2014:
# detokenized hypotheses (results/RUN_NAME/hyp.detok) against the raw references
# -> WORKDIR/results/compare/ (compare_big/ with MODEL_SIZE=big; docs/compare.md).
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
RAW_DIR=${RAW_DIR:-$WORKDIR/raw}
TGT=${TGT:-de}
LOWERCASE=${LOWERCASE:-0}
MODEL_SIZE=${MODEL_SIZE:-base}
SYSTEMS=${SYSTEMS:-mgsa_syntactic}
SEEDS=${SEEDS:-1}
BASELINE=${BASELINE:-transformer}
if [ "$MODEL_SIZE" = big ]; then RUN_SUFFIX=_big; else RUN_SUFFIX=""; fi

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
step_compare
