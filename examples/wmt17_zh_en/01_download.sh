#!/usr/bin/env bash
# Step 1: WMT17 Chinese-English into RAW_DIR:
#   train = news-commentary v12 zh-en (statmt.org, public) + every corpus of WMT17_EXTRA_CORPORA
#           (your copies of the UN Parallel Corpus v1.0 and the CWMT corpora: README.md says where
#           they come from and which need registration), as RAW_DIR/train.{zh,en};
#   valid = newsdev2017 (dev.tgz: its SGML), test = newstest2017 (test.tgz: its SGML), or the test set
#           TEST_SRC/TEST_REF names (SGML or XML), through examples/common/test_set_text.py.
# Then stanza's Chinese models into STANZA_DIR with PARSER=stanza (not with TREES_DIR or PARSER=treebank).
#   SKIP_DOWNLOAD=1: nothing is fetched; the raw files must be in RAW_DIR already (checked).
# Without network the step stops at once with one line saying what to do.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

read -r -a EXTRA <<< "$WMT17_EXTRA_CORPORA"
for pair in "${EXTRA[@]}"; do   # the user's corpora checked before anything is fetched
  [[ "$pair" == *=* ]] || die "WMT17_EXTRA_CORPORA: '$pair' is not CHINESE_FILE=ENGLISH_FILE (pairs separated by spaces)"
  need_files "${pair%%=*}" "${pair#*=}"
  same_lines "${pair%%=*}" "${pair#*=}"
done
read -r -a TEST_REFS <<< "$TEST_REF"   # one file or several
[ -z "$TEST_SRC$TEST_REF" ] || { need_files "$TEST_SRC" "${TEST_REFS[@]}"; [ "$(wc -w <<< "$TEST_SETS")" = 1 ] \
  || die "TEST_SRC/TEST_REF give one test set: TEST_SETS must name it alone (got '$TEST_SETS')"; }
SETTINGS="WMT17_EXTRA_CORPORA=$WMT17_EXTRA_CORPORA; TEST_SRC=$TEST_SRC; TEST_REF=$TEST_REF"
mapfile -t PRODUCTS < <(TREES_DIR=x download_products; parser_products)
exit_if_downloaded "$SETTINGS" "${PRODUCTS[@]}"

W=$DATA_STATMT/wmt17/translation-task
URLS=("$W/training-parallel-nc-v12.tgz" "$W/dev.tgz")
[ -n "$TEST_SRC" ] || URLS+=("$W/test.tgz")
ORIG=$WORKDIR/orig
mkdir -p "$RAW_DIR"
fetch_and_extract "$ORIG" "${URLS[@]}"

NC=$ORIG/training/news-commentary-v12.zh-en
need_files "$NC.zh" "$NC.en"
ZH=("$NC.zh") EN=("$NC.en")
for pair in "${EXTRA[@]}"; do ZH+=("${pair%%=*}"); EN+=("${pair#*=}"); done
log "training corpus: news-commentary v12 ($(lines "$NC.zh") pairs)${EXTRA[*]:+ + ${#EXTRA[@]} corpora of WMT17_EXTRA_CORPORA}"
# awk 1: each file's lines, a last line without its newline ended (cat would join it to the next file's)
awk 1 "${ZH[@]}" > "$RAW_DIR/train.zh.partial"
awk 1 "${EN[@]}" > "$RAW_DIR/train.en.partial"
for lang in zh en; do replace_if_changed "$RAW_DIR/train.$lang.partial" "$RAW_DIR/train.$lang"; done

test_set_to_raw valid "$ORIG/dev/newsdev2017-zhen-src.zh.sgm" "$ORIG/dev/newsdev2017-zhen-ref.en.sgm"
if [ -n "$TEST_SRC" ]; then
  test_set_to_raw "$TEST_SETS" "$TEST_SRC" "${TEST_REFS[@]}"
else
  in_list newstest2017 "$TEST_SETS" || die "TEST_SETS='$TEST_SETS': the download writes newstest2017 (set TEST_SRC/TEST_REF for another test set)"
  test_set_to_raw newstest2017 "$ORIG/test/newstest2017-zhen-src.zh.sgm" "$ORIG/test/newstest2017-zhen-ref.en.sgm"
fi
check_raw

fetch_parser_models
mark_done 01_download "$SETTINGS"
