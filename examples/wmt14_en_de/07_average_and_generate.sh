#!/usr/bin/env bash
# Step 7: average the last AVG_N checkpoints (5 base, 20 big, as Vaswani et al.), translate
# newstest2014 with beam 4 and length penalty 0.6, BPE removed -> WORKDIR/results/RUN_NAME/
# {generate-test.txt, hyp.tok} (hypotheses in test order, Moses-tokenized; their number is
# checked against the test set's). Redone only when training went on since.
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
DATA_BIN=${DATA_BIN:-$WORKDIR/data-bin}
SRC=${SRC:-en}
TGT=${TGT:-de}
SYSTEM=${SYSTEM:-mgsa_syntactic}
MODEL_SIZE=${MODEL_SIZE:-base}
if [ "$MODEL_SIZE" = big ]; then
  AVG_N=${AVG_N:-20}; RUN_NAME=${RUN_NAME:-${SYSTEM}_big}
else
  AVG_N=${AVG_N:-5}; RUN_NAME=${RUN_NAME:-$SYSTEM}
fi
CKPT_DIR=${CKPT_DIR:-$WORKDIR/checkpoints/$RUN_NAME}
BEAM=${BEAM:-4}
LENPEN=${LENPEN:-0.6}
GEN_MAX_TOKENS=${GEN_MAX_TOKENS:-8000}
FP16=${FP16:-auto}
GEN_EXTRA=${GEN_EXTRA:-}   # other fairseq-generate flags, e.g. --cpu
USER_DIR=${USER_DIR:-}     # --user-dir; empty: the fairseq_mgsa package Python finds (what mgsa-user-dir prints)

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
step_average_and_generate
