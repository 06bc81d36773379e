#!/usr/bin/env bash
# The whole IWSLT14 recipe, steps 1 to 8, for the baseline and MG-SA (SYSTEMS); every step skips
# what is done, so rerunning resumes. Every variable of the steps can be set by environment:
#   bash run_all.sh                                     # de-en: German source, parsed in German
#   DIRECTION=en-de bash run_all.sh                     # English source, parsed in English
#   SYSTEMS=mgsa_syntactic bash run_all.sh              # MG-SA only (python -m fairseq_mgsa.systems lists them)
#   SKIP_DOWNLOAD=1 RAW_DIR=/data/iwslt14 bash run_all.sh
#   SYSTEMS="transformer mgsa_syntactic hysan" SEEDS="1 2 3" bash run_all.sh   # 3 seeds each, then the table
#   FROM_STEP=6 bash run_all.sh                         # start at step 6
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
SYSTEMS=${SYSTEMS:-transformer mgsa_syntactic}   # systems to train, score and compare (fairseq_mgsa/systems.py)
SEEDS=${SEEDS:-1}                 # training seeds: every system is trained with each (run names get _seedN)
FROM_STEP=${FROM_STEP:-1}
export DIRECTION SRC TGT WORKDIR SYSTEMS SEEDS

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# step SCRIPT: run it unless its number is below FROM_STEP.
step() { if [ "$((10#${1:0:2}))" -ge "$FROM_STEP" ]; then bash "$HERE/$1"; fi; }

step 01_download.sh
step 02_tokenize.sh
step 03_parse.sh
step 04_bpe.sh
step 05_preprocess.sh
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
