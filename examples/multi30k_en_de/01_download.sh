#!/usr/bin/env bash
# Step 1: the raw corpus into RAW_DIR/{train,valid,test}.{en,de}: Multi30k task 1 from the
# multi30k/dataset repository (data/task1/raw: train, val, test_2016_flickr; gzipped, untokenized),
# and, for the recipe's own English parser (PARSER=treebank), NLTK's WSJ sample of the Penn
# Treebank into TREEBANK_DIR (stanza's pretrained English models instead with PARSER=stanza).
#   SKIP_DOWNLOAD=1: nothing is fetched; the raw files must be in RAW_DIR already (checked).
#   MULTI30K_URL / TREEBANK_URL: a mirror, e.g. file:///data/multi30k (files named as upstream).
# Without network the step stops at once with one line saying what to do.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

# the files chosen (a change redoes the step, and the steps after it whose input changes)
SETTINGS="MULTI30K_TEST=$MULTI30K_TEST PARSER=$PARSER"
# the raw splits, and the parser's treebank (PARSER=treebank) or stanza's models (PARSER=stanza)
mapfile -t PRODUCTS < <(TREES_DIR=${TREES_DIR:-x} download_products)
if [ "$PARSER" = treebank ]; then PRODUCTS+=("$TREEBANK_DIR/treebank/combined"); else PRODUCTS+=("$STANZA_DIR/$PARSER_LANG/constituency"); fi
exit_if_downloaded "$SETTINGS" "${PRODUCTS[@]}"
need curl "install curl, or fetch the data elsewhere and run with SKIP_DOWNLOAD=1 RAW_DIR=<its folder>"
check_network "$MULTI30K_URL/train.$SRC.gz"
ORIG=$WORKDIR/orig
mkdir -p "$ORIG" "$RAW_DIR"
for pair in train:train valid:val "test:$MULTI30K_TEST"; do
  split=${pair%%:*} upstream=${pair#*:}
  for lang in "$SRC" "$TGT"; do
    fetch "$MULTI30K_URL/$upstream.$lang.gz" "$ORIG/$upstream.$lang.gz"
    gzip -dc "$ORIG/$upstream.$lang.gz" > "$RAW_DIR/$split.$lang.partial" \
      || die "$ORIG/$upstream.$lang.gz: not a gzip file (a broken download? delete it and rerun)"
    # an unchanged file keeps its time: the later steps do not redo their work for it
    replace_if_changed "$RAW_DIR/$split.$lang.partial" "$RAW_DIR/$split.$lang"
  done
done
check_raw

case "$PARSER" in
  treebank)
    need unzip "install unzip"
    mkdir -p "$TREEBANK_DIR"
    fetch "$TREEBANK_URL" "$TREEBANK_DIR/treebank.zip"
    unzip -qo "$TREEBANK_DIR/treebank.zip" -d "$TREEBANK_DIR" \
      || die "$TREEBANK_DIR/treebank.zip: cannot extract (a broken download? delete it and rerun)"
    need_files "$TREEBANK_DIR/treebank/combined/wsj_0001.mrg"
    log "treebank: $(find "$TREEBANK_DIR/treebank/combined" -name '*.mrg' | wc -l) files in $TREEBANK_DIR/treebank/combined" ;;
  stanza) fetch_stanza_models ;;
  *) die "PARSER must be treebank or stanza (got '$PARSER')" ;;
esac
mark_done 01_download "$SETTINGS"
