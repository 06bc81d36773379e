#!/usr/bin/env bash
# The whole WMT14 En-De recipe, steps 1 to 8; every step skips what is done, so rerunning
# resumes. Every variable of the steps can be set by environment, e.g.
#   GPUS=4 bash run_all.sh                               # update-freq 2: the paper's batch
#   MODEL_SIZE=big bash run_all.sh                       # Transformer-Big + MG-SA
#   SYSTEMS="transformer mgsa_syntactic" bash run_all.sh # baseline and MG-SA (python -m fairseq_mgsa.systems lists them)
#   SKIP_DOWNLOAD=1 RAW_DIR=/data/wmt14 bash run_all.sh  # raw text already there
#   SYSTEMS="transformer mgsa_syntactic hysan" SEEDS="1 2 3" bash run_all.sh   # 3 seeds each, then the table
#   FROM_STEP=6 bash run_all.sh                          # start at step 6
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
MODEL_SIZE=${MODEL_SIZE:-base}
SYSTEMS=${SYSTEMS:-mgsa_syntactic}   # systems to train, score and compare (fairseq_mgsa/systems.py)
SEEDS=${SEEDS:-1}                 # training seeds: every system is trained with each (run names get _seedN)
FROM_STEP=${FROM_STEP:-1}
export WORKDIR MODEL_SIZE SYSTEMS SEEDS

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# step SCRIPT: run it unless its number is below FROM_STEP.
step() { if [ "$((10#${1:0:2}))" -ge "$FROM_STEP" ]; then bash "$HERE/$1"; fi; }

step 01_download.sh
step 02_tokenize.sh
step 03_parse.sh
step 04_bpe.sh
step 05_preprocess.sh
if [ "$MODEL_SIZE" = big ]; then RUN_SUFFIX=_big; else RUN_SUFFIX=""; fi
export RUN_SUFFIX
# shellcheck source=../common/steps.sh
source "$HERE/../common/steps.sh"   # run_name

for system in $SYSTEMS; do
  for seed in $SEEDS; do
    run=$(run_name "$system" "$seed")
    SYSTEM=$system SEED=$seed RUN_NAME=$run step 06_train.sh
    SYSTEM=$system SEED=$seed RUN_NAME=$run step 07_average_and_generate.sh
    SYSTEM=$system SEED=$seed RUN_NAME=$run step 08_score.sh
  done
done
echo "== $WORKDIR/results"
for system in $SYSTEMS; do
  for seed in $SEEDS; do
    run=$(run_name "$system" "$seed")
    if [ -f "$WORKDIR/results/$run/bleu.txt" ]; then cat "$WORKDIR/results/$run/bleu.txt"; fi
  done
done
step 09_compare.sh   # the table: every system against the baseline (results/compare${RUN_SUFFIX}/)
