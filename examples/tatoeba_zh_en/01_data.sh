#!/usr/bin/env bash
# Step 1: Tatoeba's Mandarin-English pairs into RAW_DIR/{train,valid,test}.{zh,en} and
# RAW_DIR/{valid,test}.refs.tsv (every English translation of each dev and test sentence).
#   CMN_TXT=/path/cmn.txt: the user's own copy (Tatoeba's export, or any of its public copies);
#   else cmn.txt is fetched from TATOEBA_URL (a public copy pinned by commit) into WORKDIR/orig/,
#   and its sha256 must be TATOEBA_SHA256 (set TATOEBA_SHA256= empty to accept another file).
# Then split_tatoeba.py: DEV_SENTENCES and TEST_SENTENCES Chinese sentences (seeded by SPLIT_SEED,
# grouped by sentence, Traditional and Simplified spellings together with ZH_T2S=1) each once with
# all their translations, every other pair in train. The corpus is CC-BY 2.0 FR (tatoeba.org):
# the attributions are kept beside each split, RAW_DIR/{split}.attribution.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

if [ "$SKIP_DOWNLOAD" = 1 ]; then   # the splits are in RAW_DIR already (checked)
  check_raw
  need_files "$RAW_DIR/valid.refs.tsv" "$RAW_DIR/test.refs.tsv"
  exit 0
fi
ORIG=$WORKDIR/orig
if [ -n "$CMN_TXT" ]; then
  need_files "$CMN_TXT"
  input=$CMN_TXT
else
  input=$ORIG/cmn.txt
fi
t2s=()
[ "$ZH_T2S" = 1 ] && t2s=(--t2s)
SETTINGS="DEV_SENTENCES=$DEV_SENTENCES TEST_SENTENCES=$TEST_SENTENCES SPLIT_SEED=$SPLIT_SEED ZH_T2S=$ZH_T2S"

# sha256_ok FILE: FILE's sha256 is TATOEBA_SHA256 (or that is empty); else one line saying what to do.
sha256_ok() {
  [ -n "$TATOEBA_SHA256" ] || return 0
  local sum
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$sum" = "$TATOEBA_SHA256" ] || die "$1: sha256 $sum, not the pinned $TATOEBA_SHA256 (another version of cmn.txt: delete it to fetch again, or use it with TATOEBA_SHA256= and CMN_TXT=$1; the split, and so every figure, then differs from README.md's)"
}

if [ -z "$CMN_TXT" ] && [ ! -s "$input" ]; then
  need curl "install curl, or fetch cmn.txt elsewhere and run with CMN_TXT=<its path>"
  check_network "$TATOEBA_URL"
  mkdir -p "$ORIG"
  fetch "$TATOEBA_URL" "$input"
fi
[ -n "$CMN_TXT" ] || sha256_ok "$input"

split_step() {
  mkdir -p "$RAW_DIR"
  python "$(dirname "${BASH_SOURCE[0]}")/split_tatoeba.py" --input "$input" --out "$RAW_DIR" \
    --dev "$DEV_SENTENCES" --test "$TEST_SENTENCES" --seed "$SPLIT_SEED" "${t2s[@]}"
}
run_step 01_data split_step "$SETTINGS" "$input"
check_raw
