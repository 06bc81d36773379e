#!/usr/bin/env bash
# Step 9: mgsa-compare of the SYSTEMS (every seed of SEEDS) against BASELINE on the test set:
# detokenized hypotheses (results/RUN_NAME/hyp.detok) against the raw references, lowercased
# with LOWERCASE=1 (the recipe's default) -> WORKDIR/results/compare/ (docs/compare.md).
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
RAW_DIR=${RAW_DIR:-$WORKDIR/raw}
LOWERCASE=${LOWERCASE:-1}
SYSTEMS=${SYSTEMS:-transformer mgsa_syntactic}
SEEDS=${SEEDS:-1}
BASELINE=${BASELINE:-transformer}

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
step_compare
