#!/usr/bin/env bash
# Step 1: WMT16 English-Russian, the phrase-based attention paper's Table 1 data, written raw and
# untokenized as RAW_DIR/{train,valid,test}.{en,ru}:
#   train = Common Crawl + News Commentary v11 + Wiki Headlines (public, from statmt.org)
#           + Yandex's 1M corpus (YANDEX_DIR) + the UN Parallel Corpus v1.0 (UN_DIR), the two
#           that need a registration, read from where the user unpacked them (left out, with a
#           warning, when not given: the paper's "about 25M pairs" are mostly the UN corpus's);
#   valid = newstest2013, test = newstest2014 (the full version, 3003 sentences; the direction's
#           own source and reference files).
# Then, for an English source whose systems read trees (and without TREES_DIR), stanza's English
# models into STANZA_DIR.
#
# SKIP_DOWNLOAD=1: nothing is fetched; the raw files must be in RAW_DIR already (checked).
# Without network the step stops at once with one line saying what to do.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

# the parser's models only where a parse will need them
PARSER_NEEDED=no
if [ "$SRC" = en ] && [ -z "$TREES_DIR" ]; then PARSER_NEEDED=$(systems_need_trees) || exit 1; fi
PRODUCTS=()
for split in train valid test; do for lang in en ru; do PRODUCTS+=("$RAW_DIR/$split.$lang"); done; done
[ "$PARSER_NEEDED" = no ] || PRODUCTS+=("$STANZA_DIR/$PARSER_LANG/constituency")
exit_if_downloaded "YANDEX_DIR=$YANDEX_DIR; UN_DIR=$UN_DIR; WIKI_HEADLINES=$WIKI_HEADLINES" "${PRODUCTS[@]}"

# the registered corpora, checked before any download
YANDEX=() UN=()
if [ -n "$YANDEX_DIR" ]; then
  need_files "$YANDEX_DIR/corpus.en_ru.1m.en" "$YANDEX_DIR/corpus.en_ru.1m.ru"
  YANDEX=("$YANDEX_DIR/corpus.en_ru.1m")
else
  log "warning: YANDEX_DIR not set: training without Yandex's 1M corpus (https://translate.yandex.ru/corpus?lang=en, after registration; README.md)"
fi
if [ -n "$UN_DIR" ]; then
  need_files "$UN_DIR/UNv1.0.en-ru.en" "$UN_DIR/UNv1.0.en-ru.ru"
  UN=("$UN_DIR/UNv1.0.en-ru")
else
  log "warning: UN_DIR not set: training without the UN Parallel Corpus v1.0, most of the paper's 25M pairs (README.md)"
fi

URLS=(
  "$STATMT/wmt13/training-parallel-commoncrawl.tgz"
  "$DATA_STATMT/wmt16/translation-task/training-parallel-nc-v11.tgz"
  "$DATA_STATMT/wmt16/translation-task/dev.tgz"
  "$STATMT/wmt14/test-full.tgz"
)
[ "$WIKI_HEADLINES" = 1 ] && URLS+=("$STATMT/wmt15/wiki-titles.tgz")
ORIG=$WORKDIR/orig
mkdir -p "$RAW_DIR"
fetch_and_extract "$ORIG" "${URLS[@]}"

# Wiki Headlines: one pair a line, "Russian ||| English"
WIKI=()
if [ "$WIKI_HEADLINES" = 1 ]; then
  need_files "$ORIG/wiki/ru-en/wiki.ru-en"
  awk -F ' \\|\\|\\| ' -v out="$ORIG/wiki.ru-en" \
    'NF != 2 { printf "%s:%d: expected \"Russian ||| English\"\n", FILENAME, FNR > "/dev/stderr"; exit 1 }
     { print $1 > (out ".ru"); print $2 > (out ".en") }' "$ORIG/wiki/ru-en/wiki.ru-en" \
    || die "$ORIG/wiki/ru-en/wiki.ru-en: not the Wiki Headlines format (see the line above)"
  WIKI=("$ORIG/wiki.ru-en")
fi

# newstest2014 as SGML, one <seg id="N"> per sentence: the direction's source file and reference
sgm_text() {
  grep '<seg id' "$1" | sed -e 's/<seg id="[0-9]*">[[:space:]]*//' -e 's/[[:space:]]*<\/seg>[[:space:]]*$//'
}
CORPORA=("$ORIG/commoncrawl.ru-en" "$ORIG/training-parallel-nc-v11/news-commentary-v11.ru-en" "${WIKI[@]}" "${YANDEX[@]}" "${UN[@]}")
for lang in en ru; do
  kind=ref
  [ "$lang" = "$SRC" ] && kind=src
  files=()
  for corpus in "${CORPORA[@]}"; do files+=("$corpus.$lang"); done
  need_files "${files[@]}" "$ORIG/dev/newstest2013.$lang" "$ORIG/test-full/newstest2014-ruen-$kind.$lang.sgm"
  # awk 1: each file's lines, a last line without its newline ended (cat would join it to the next file's)
  awk 1 "${files[@]}" > "$RAW_DIR/train.$lang.partial"
  cp "$ORIG/dev/newstest2013.$lang" "$RAW_DIR/valid.$lang.partial"
  sgm_text "$ORIG/test-full/newstest2014-ruen-$kind.$lang.sgm" > "$RAW_DIR/test.$lang.partial"
  # unchanged files keep their time: a redone download does not make the later steps redo their work
  for split in train valid test; do replace_if_changed "$RAW_DIR/$split.$lang.partial" "$RAW_DIR/$split.$lang"; done
done
check_raw

[ "$PARSER_NEEDED" = no ] || fetch_stanza_models
mark_done 01_download "YANDEX_DIR=$YANDEX_DIR; UN_DIR=$UN_DIR; WIKI_HEADLINES=$WIKI_HEADLINES"
