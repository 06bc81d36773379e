#!/usr/bin/env bash
# Step 6: training with the paper's settings, which are Vaswani et al.'s (2017): 8 GPUs x 4096
# tokens (on fewer GPUs --update-freq ceil(8/GPUS) keeps the batch), Adam (0.9, 0.98, eps 1e-9),
# inverse square root schedule with 4000 warm-up updates, label smoothing 0.1, shared
# embeddings (joined dictionary), phrase-tag loss weight 0.001, fp16 on GPU.
#   base: lr 7e-4 (= 512^-0.5 * 4000^-0.5, Vaswani et al.'s peak), dropout 0.1, 100k updates;
#   big:  lr 5e-4 (= 1024^-0.5 * 4000^-0.5), dropout 0.3, 300k updates.
# A checkpoint every SAVE_INTERVAL_UPDATES updates, the last AVG_N kept (step 7 averages them).
# Stopped and rerun, fairseq resumes from CKPT_DIR/checkpoint_last.pt.
#   SYSTEM picks the system (fairseq_mgsa/systems.py: architecture, task, criterion; `python -m
#   fairseq_mgsa.systems` lists them), MODEL_SIZE=base|big its size and the defaults below.
#   The baseline, same settings: SYSTEM=transformer.
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
DATA_BIN=${DATA_BIN:-$WORKDIR/data-bin}
SRC=${SRC:-en}
TGT=${TGT:-de}
SYSTEM=${SYSTEM:-mgsa_syntactic}   # the paper's full MG-SA
MODEL_SIZE=${MODEL_SIZE:-base}
case "$MODEL_SIZE" in
  base) LR=${LR:-7e-4}; DROPOUT=${DROPOUT:-0.1}; MAX_UPDATE=${MAX_UPDATE:-100000}; AVG_N=${AVG_N:-5}
        RUN_NAME=${RUN_NAME:-$SYSTEM} ;;
  big)  LR=${LR:-5e-4}; DROPOUT=${DROPOUT:-0.3}; MAX_UPDATE=${MAX_UPDATE:-300000}; AVG_N=${AVG_N:-20}
        RUN_NAME=${RUN_NAME:-${SYSTEM}_big} ;;
  *) echo "$(basename "$0"): error: MODEL_SIZE must be base or big (got '$MODEL_SIZE')" >&2; exit 1 ;;
esac
ARCH_SIZE=$MODEL_SIZE
CKPT_DIR=${CKPT_DIR:-$WORKDIR/checkpoints/$RUN_NAME}
MAX_TOKENS=${MAX_TOKENS:-4096}     # per GPU
PAPER_GPUS=${PAPER_GPUS:-8}        # the batch is PAPER_GPUS x MAX_TOKENS whatever GPUS is
WARMUP=${WARMUP:-4000}
WEIGHT_DECAY=${WEIGHT_DECAY:-0.0}
LABEL_SMOOTHING=${LABEL_SMOOTHING:-0.1}
SAVE_INTERVAL_UPDATES=${SAVE_INTERVAL_UPDATES:-1000}
LOG_INTERVAL=${LOG_INTERVAL:-100}
SEED=${SEED:-1}
FP16=${FP16:-auto}                 # auto: on when torch sees a GPU
SYSTEM_ARGS=${SYSTEM_ARGS:-}       # options after the system's own, e.g. --mgsa-interaction lstm (an ablation)
FAIRSEQ_EXTRA=${FAIRSEQ_EXTRA:-}   # any other fairseq-train flags, e.g. --cpu
USER_DIR=${USER_DIR:-}             # --user-dir; empty: the fairseq_mgsa package Python finds (what mgsa-user-dir prints)

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
GPUS=${GPUS:-$(num_gpus)}          # GPUs to train on (default: all that nvidia-smi lists)
UPDATE_FREQ=${UPDATE_FREQ:-$(( (PAPER_GPUS + (GPUS > 0 ? GPUS : 1) - 1) / (GPUS > 0 ? GPUS : 1) ))}
run_step "06_train.$RUN_NAME.$MAX_UPDATE" step_train
