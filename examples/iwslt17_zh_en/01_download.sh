#!/usr/bin/env bash
# Step 1: IWSLT17 Chinese-English (TED talks) into RAW_DIR:
#   train = WIT3's 2017-01-trnted zh-en archive (IWSLT_TRAIN_URL): train.tags.zh-en.{zh,en} without
#           the talks' metadata lines (url, talkid, keywords, ...) and with the title and description
#           tags stripped (about 231k pairs);
#   valid = the archive's VALID_SETS (dev2010 by default; tst2010 ... tst2015 too), put together;
#   tests = each of TEST_SETS: tst2016 and tst2017 from WIT3's 2017-01-ted-test archive
#           (WIT3_TEST_URL), the Chinese of texts/zh/en/zh-en.tgz and, as its reference, the English of
#           the same talks in texts/en/zh/en-zh.tgz, matched by talk and segment id; a name of the
#           training archive's sets (tst2015 ...) takes that set and its reference.
# Every .xml through examples/common/test_set_text.py. Then stanza's Chinese models into STANZA_DIR
# with PARSER=stanza (not with TREES_DIR or PARSER=treebank).
#   SKIP_DOWNLOAD=1: nothing is fetched; the raw files must be in RAW_DIR already (checked).
#   IWSLT_TRAIN_URL / WIT3_TEST_URL: a mirror, e.g. file:///data/wit3 (files named as upstream).
# Without network the step stops at once with one line saying what to do.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

SETTINGS="VALID_SETS=$VALID_SETS; IWSLT_TRAIN_URL=$IWSLT_TRAIN_URL; WIT3_TEST_URL=$WIT3_TEST_URL"
mapfile -t PRODUCTS < <(TREES_DIR=x download_products; parser_products)
exit_if_downloaded "$SETTINGS" "${PRODUCTS[@]}"

need curl "install curl, or fetch the data elsewhere and run with SKIP_DOWNLOAD=1 RAW_DIR=<its folder>"
check_network "$IWSLT_TRAIN_URL"
ORIG=$WORKDIR/orig
mkdir -p "$ORIG/train" "$ORIG/test" "$RAW_DIR"
# extract ARCHIVE DIR: a .zip or a .tgz into DIR, once
extract() {
  [ -f "$1.extracted" ] && return 0
  case "$1" in
    *.zip) need unzip "install unzip"; unzip -qo "$1" -d "$2" ;;
    *) tar -xzf "$1" -C "$2" ;;
  esac || die "$1: cannot extract (a broken download? delete it and rerun)"
  touch "$1.extracted"
}
fetch "$IWSLT_TRAIN_URL" "$ORIG/$(basename "$IWSLT_TRAIN_URL")"
extract "$ORIG/$(basename "$IWSLT_TRAIN_URL")" "$ORIG/train"
for pair in zh/en/zh-en en/zh/en-zh; do
  fetch "$WIT3_TEST_URL/$pair.tgz" "$ORIG/test-$(basename "$pair").tgz"
  extract "$ORIG/test-$(basename "$pair").tgz" "$ORIG/test"
done

# find_one NAME: the one file NAME under ORIG (the archives' folder layout varies by mirror)
find_one() {
  local found=()
  mapfile -t found < <(find "$ORIG" -name "$1" -type f)
  [ "${#found[@]}" = 1 ] || die "$ORIG: ${#found[@]} files named $1 in the extracted archives (one expected: is IWSLT_TRAIN_URL or WIT3_TEST_URL the zh-en release?)"
  echo "${found[0]}"
}

# The talks' text: one sentence a line between metadata lines such as <url>...</url>.
talk_text() {
  grep -v -e '<url>' -e '<talkid>' -e '<keywords>' -e '<speaker>' -e '<reviewer' -e '<translator' "$1" \
    | sed -e 's/<title>//g' -e 's/<\/title>//g' -e 's/<description>//g' -e 's/<\/description>//g'
}
for lang in zh en; do
  talk_text "$(find_one "train.tags.zh-en.$lang")" > "$RAW_DIR/train.$lang.partial"
  replace_if_changed "$RAW_DIR/train.$lang.partial" "$RAW_DIR/train.$lang"
done

# set_files NAME: the source and reference .xml of NAME: the training archive's, else the test archive's
set_files() {
  if [ -n "$(find "$ORIG/train" -name "IWSLT17.TED.$1.zh-en.zh.xml" -type f)" ]; then
    echo "$(find_one "IWSLT17.TED.$1.zh-en.zh.xml") $(find_one "IWSLT17.TED.$1.zh-en.en.xml")"
  else
    echo "$(find_one "IWSLT17.TED.$1.zh-en.zh.xml") $(find_one "IWSLT17.TED.$1.en-zh.en.xml")"
  fi
}
read -r -a VALID <<< "$VALID_SETS"
tmp=$WORKDIR/orig/text
for name in "${VALID[@]}"; do
  read -r src ref <<< "$(set_files "$name")"
  mkdir -p "$tmp"
  python "$COMMON_DIR/test_set_text.py" --src "$src" --refs "$ref" --out "$tmp/valid.$name" --src-lang zh --tgt-lang en || exit 1
done
for lang in zh en; do
  : > "$tmp/valid.$lang"
  for name in "${VALID[@]}"; do cat "$tmp/valid.$name.$lang" >> "$tmp/valid.$lang"; done
done
install_split "$tmp/valid" valid
for name in "${TEST_NAMES[@]}"; do
  read -r src ref <<< "$(set_files "$name")"
  test_set_to_raw "$name" "$src" "$ref"
done
check_raw

fetch_parser_models
mark_done 01_download "$SETTINGS"
