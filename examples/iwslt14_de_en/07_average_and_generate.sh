#!/usr/bin/env bash
# Step 7: average the last AVG_N checkpoints, translate the test set with beam 5 (fairseq's
# IWSLT14 setting), BPE removed -> WORKDIR/results/RUN_NAME/{generate-test.txt, hyp.tok}
# (hypotheses in test order, tokenized and lowercased; their number is checked against the
# test set's). Redone only when training went on since.
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
DATA_BIN=${DATA_BIN:-$WORKDIR/data-bin}
SYSTEM=${SYSTEM:-mgsa_syntactic}
RUN_NAME=${RUN_NAME:-$SYSTEM}
CKPT_DIR=${CKPT_DIR:-$WORKDIR/checkpoints/$RUN_NAME}
AVG_N=${AVG_N:-5}
BEAM=${BEAM:-5}
LENPEN=${LENPEN:-1.0}
GEN_MAX_TOKENS=${GEN_MAX_TOKENS:-8000}
FP16=${FP16:-auto}
GEN_EXTRA=${GEN_EXTRA:-}   # other fairseq-generate flags, e.g. --cpu
USER_DIR=${USER_DIR:-}     # --user-dir; empty: the fairseq_mgsa package Python finds (what mgsa-user-dir prints)

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
step_average_and_generate
