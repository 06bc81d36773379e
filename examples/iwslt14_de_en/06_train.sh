#!/usr/bin/env bash
# Step 6: training on one GPU with fairseq's IWSLT14 settings: transformer_iwslt_de_en sizes
# (d 512, ffn 1024, 4 heads, 6+6 layers), 4096 tokens a batch, Adam (0.9, 0.98), lr 5e-4 with
# 4000 warm-up updates (inverse square root), dropout 0.3, weight decay 1e-4, label smoothing 0.1,
# shared embeddings (joined dictionary). SYSTEM picks the system (fairseq_mgsa/systems.py, at its
# iwslt size; `python -m fairseq_mgsa.systems` lists them): by default the paper's full MG-SA in
# encoder layer 1, one head per granularity (word + the top 3 tree levels), SANs composition,
# ON-LSTM interaction, phrase-tag loss weight 0.001. A checkpoint every SAVE_INTERVAL_UPDATES
# updates, the last AVG_N kept (step 7 averages them). Stopped and rerun, fairseq resumes from
# checkpoint_last.pt.
#   The baseline, same settings: SYSTEM=transformer (run_all.sh trains both).
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
DATA_BIN=${DATA_BIN:-$WORKDIR/data-bin}
SYSTEM=${SYSTEM:-mgsa_syntactic}   # the paper's full MG-SA
SYSTEM_ARGS=${SYSTEM_ARGS:-}       # options after the system's own, e.g. --mgsa-interaction lstm (an ablation)
RUN_NAME=${RUN_NAME:-$SYSTEM}
ARCH_SIZE=iwslt
CKPT_DIR=${CKPT_DIR:-$WORKDIR/checkpoints/$RUN_NAME}
LR=${LR:-5e-4}
DROPOUT=${DROPOUT:-0.3}
WEIGHT_DECAY=${WEIGHT_DECAY:-0.0001}
MAX_UPDATE=${MAX_UPDATE:-50000}
MAX_TOKENS=${MAX_TOKENS:-4096}
UPDATE_FREQ=${UPDATE_FREQ:-1}
WARMUP=${WARMUP:-4000}
LABEL_SMOOTHING=${LABEL_SMOOTHING:-0.1}
SAVE_INTERVAL_UPDATES=${SAVE_INTERVAL_UPDATES:-1000}
AVG_N=${AVG_N:-5}
LOG_INTERVAL=${LOG_INTERVAL:-100}
SEED=${SEED:-1}
FP16=${FP16:-auto}                 # auto: on when torch sees a GPU
FAIRSEQ_EXTRA=${FAIRSEQ_EXTRA:-}   # any other fairseq-train flags, e.g. --cpu
USER_DIR=${USER_DIR:-}             # --user-dir; empty: the fairseq_mgsa package Python finds (what mgsa-user-dir prints)

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
GPUS=${GPUS:-$(( $(num_gpus) > 0 ? 1 : 0 ))}   # one GPU when there is one (0: CPU, with FAIRSEQ_EXTRA=--cpu)
run_step "06_train.$RUN_NAME.$MAX_UPDATE" step_train
