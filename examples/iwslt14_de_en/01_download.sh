#!/usr/bin/env bash
# Step 1: download IWSLT14 German-English (TED talks) from the mirror fairseq's
# examples/translation/prepare-iwslt14.sh uses, and write the raw, untokenized text as
# RAW_DIR/{train,valid,test}.{de,en}:
#   train.tags.de-en without its metadata lines (url, talkid, keywords) and with the title and
#     description tags stripped; every VALID_EVERY-th (23rd) pair goes to valid, the rest to train
#     (fairseq splits after cleaning, this before, so the valid sets differ slightly);
#   test = dev2010 + TEDX.dev2012 + tst2010 + tst2011 + tst2012 (6750 pairs), as fairseq's.
# Then the stanza models (tokenize, pos, constituency) of the source language into STANZA_DIR
# (not with TREES_DIR: gold trees need no parser).
#
# SKIP_DOWNLOAD=1: nothing is fetched; the raw files must be in RAW_DIR already (checked).
# Without network the step stops at once with one line saying what to do.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

case "$SRC-$TGT" in
  de-en|en-de) ;;
  *) die "DIRECTION (or SRC/TGT) must be de-en or en-de (got $SRC-$TGT)" ;;
esac
mapfile -t PRODUCTS < <(download_products)
exit_if_downloaded "VALID_EVERY=$VALID_EVERY" "${PRODUCTS[@]}"

need curl "install curl, or fetch the data elsewhere and run with SKIP_DOWNLOAD=1 RAW_DIR=<its folder>"
check_network "$IWSLT_URL"
ORIG=$WORKDIR/orig
mkdir -p "$ORIG" "$RAW_DIR"
archive=$ORIG/$(basename "$IWSLT_URL")
fetch "$IWSLT_URL" "$archive"
if [ ! -f "$archive.extracted" ]; then
  tar -xzf "$archive" -C "$ORIG" || die "$archive: cannot extract (a broken download? delete it and rerun)"
  touch "$archive.extracted"
fi

# The talks' text: one sentence a line between metadata lines such as <url>...</url>.
talk_text() {
  grep -v -e '<url>' -e '<talkid>' -e '<keywords>' "$1" \
    | sed -e 's/<title>//g' -e 's/<\/title>//g' -e 's/<description>//g' -e 's/<\/description>//g'
}
# The dev/test sets: XML, one <seg id="N"> per sentence.
seg_text() {
  grep '<seg id' "$1" | sed -e 's/<seg id="[0-9]*">[[:space:]]*//' -e 's/[[:space:]]*<\/seg>[[:space:]]*$//'
}
TESTS=(IWSLT14.TED.dev2010 IWSLT14.TEDX.dev2012 IWSLT14.TED.tst2010 IWSLT14.TED.tst2011 IWSLT14.TED.tst2012)
for lang in de en; do
  need_files "$ORIG/de-en/train.tags.de-en.$lang"
  talk_text "$ORIG/de-en/train.tags.de-en.$lang" > "$ORIG/train.$lang"
  awk -v n="$VALID_EVERY" 'NR % n == 0' "$ORIG/train.$lang" > "$RAW_DIR/valid.$lang.partial"
  awk -v n="$VALID_EVERY" 'NR % n != 0' "$ORIG/train.$lang" > "$RAW_DIR/train.$lang.partial"
  : > "$RAW_DIR/test.$lang.partial"
  for t in "${TESTS[@]}"; do
    need_files "$ORIG/de-en/$t.de-en.$lang.xml"
    seg_text "$ORIG/de-en/$t.de-en.$lang.xml" >> "$RAW_DIR/test.$lang.partial"
  done
  # unchanged files keep their time: a redone download does not make the later steps redo their work
  for split in train valid test; do replace_if_changed "$RAW_DIR/$split.$lang.partial" "$RAW_DIR/$split.$lang"; done
done
check_raw

[ -n "$TREES_DIR" ] || fetch_stanza_models
mark_done 01_download "VALID_EVERY=$VALID_EVERY"
