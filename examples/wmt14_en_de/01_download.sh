#!/usr/bin/env bash
# Step 1: download WMT14 En-De from the sources fairseq's examples/translation/prepare-wmt14en2de.sh
# uses, and write the raw, untokenized text as RAW_DIR/{train,valid,test}.{en,de}:
#   train = Europarl v7 + Common Crawl + News Commentary v9 (WMT14's 4.5M pairs; the paper
#           says 4.56M; NEWS_COMMENTARY=v12 gives fairseq's default corpus instead),
#   valid = newstest2013, test = newstest2014 (the full version, 3003 sentences);
# then the stanza models (tokenize, pos, constituency) of the source language into STANZA_DIR
# (not with TREES_DIR: gold trees need no parser).
#
# SKIP_DOWNLOAD=1: nothing is fetched; the raw files must be in RAW_DIR already (checked).
# Without network the step stops at once with one line saying what to do.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

mapfile -t PRODUCTS < <(download_products)
exit_if_downloaded "NEWS_COMMENTARY=$NEWS_COMMENTARY" "${PRODUCTS[@]}"

case "$NEWS_COMMENTARY" in
  v9) NC_URL=$STATMT/wmt14/training-parallel-nc-v9.tgz; NC=training/news-commentary-v9.de-en ;;
  v12) NC_URL=$DATA_STATMT/wmt17/translation-task/training-parallel-nc-v12.tgz; NC=training/news-commentary-v12.de-en ;;
  *) die "NEWS_COMMENTARY must be v9 or v12 (got $NEWS_COMMENTARY)" ;;
esac
URLS=(
  "$STATMT/wmt13/training-parallel-europarl-v7.tgz"
  "$STATMT/wmt13/training-parallel-commoncrawl.tgz"
  "$NC_URL"
  "$DATA_STATMT/wmt17/translation-task/dev.tgz"
  "$STATMT/wmt14/test-full.tgz"
)
ORIG=$WORKDIR/orig
mkdir -p "$RAW_DIR"
fetch_and_extract "$ORIG" "${URLS[@]}"

# newstest2014 comes as SGML, one <seg id="N"> per sentence: the "src" file of the English
# side and the "ref" file of the German side, as fairseq takes them (the same 3003 pairs).
sgm_text() {
  grep '<seg id' "$1" | sed -e 's/<seg id="[0-9]*">[[:space:]]*//' -e 's/[[:space:]]*<\/seg>[[:space:]]*$//'
}
for lang in en de; do
  kind=ref
  [ "$lang" = en ] && kind=src
  need_files "$ORIG/training/europarl-v7.de-en.$lang" "$ORIG/commoncrawl.de-en.$lang" "$ORIG/$NC.$lang" \
    "$ORIG/dev/newstest2013.$lang" "$ORIG/test-full/newstest2014-deen-$kind.$lang.sgm"
  # awk 1: each file's lines, a last line without its newline ended (cat would join it to the next file's)
  awk 1 "$ORIG/training/europarl-v7.de-en.$lang" "$ORIG/commoncrawl.de-en.$lang" "$ORIG/$NC.$lang" \
    > "$RAW_DIR/train.$lang.partial"
  cp "$ORIG/dev/newstest2013.$lang" "$RAW_DIR/valid.$lang.partial"
  sgm_text "$ORIG/test-full/newstest2014-deen-$kind.$lang.sgm" > "$RAW_DIR/test.$lang.partial"
  # unchanged files keep their time: a redone download does not make the later steps redo their work
  for split in train valid test; do replace_if_changed "$RAW_DIR/$split.$lang.partial" "$RAW_DIR/$split.$lang"; done
done
check_raw

[ -n "$TREES_DIR" ] || fetch_stanza_models
mark_done 01_download "NEWS_COMMENTARY=$NEWS_COMMENTARY"
