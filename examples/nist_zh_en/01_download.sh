#!/usr/bin/env bash
# Step 1: your LDC files (their paths: NIST_PATHS, paths.sh beside this file) into RAW_DIR, as
# every recipe's later steps read them: the training corpus as RAW_DIR/train.{zh,en}; MT02 (the
# dev set) as RAW_DIR/valid.{zh,en}; MT03-MT06 (the test sets) as RAW_DIR/mt03.zh ... With its four
# references each set's are split into RAW_DIR/NAME.en (the first, also what validation and the
# binaries use) and NAME.en.ref1, .ref2, .ref3 (examples/common/test_set_text.py: SGML or XML,
# one file or several; the source matched to the references by document and segment id).
# Then stanza's Chinese models (tokenize, pos, constituency: zh-hans) into STANZA_DIR, with
# PARSER=stanza (needs network; not with TREES_DIR, nor with PARSER=treebank).
#
# Nothing is downloaded from LDC: the data are licensed (README.md says what to obtain).
# SKIP_DOWNLOAD=1: the raw files must be in RAW_DIR already (checked), NIST_PATHS is not read.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"

# MT02 (the dev set) and the test sets of TEST_SETS (by default all of MT03-MT06): NAME:SPLIT
SETS=(MT02:valid)
for name in $TEST_SETS; do
  case "$name" in
    mt03|mt04|mt05|mt06) SETS+=("MT${name#mt}:$name") ;;
    *) die "TEST_SETS='$TEST_SETS': $name is none of NIST's test sets mt03, mt04, mt05, mt06" ;;
  esac
done
if [ "$SKIP_DOWNLOAD" != 1 ]; then
  need_files "$NIST_PATHS"
  # shellcheck source=paths.sh
  source "$NIST_PATHS"
fi

# every path checked before anything is read or written: one line naming each problem
check_paths() {
  local problems=() var value f set
  local vars=(NIST_TRAIN_ZH NIST_TRAIN_EN)
  for set in "${SETS[@]}"; do vars+=("NIST_${set%%:*}_SRC" "NIST_${set%%:*}_REF"); done
  for var in "${vars[@]}"; do
    value=${!var-}
    if [ -z "$value" ]; then problems+=("$var is not set"); continue; fi
    for f in $value; do [ -s "$f" ] || problems+=("$var: $f not found (or empty)"); done
  done
  if [ "${#problems[@]}" -gt 0 ]; then
    local line
    line=$(printf '%s; ' "${problems[@]}")
    die "$NIST_PATHS: ${line%; } (README.md: what to obtain from LDC and how to list it here)"
  fi
}

if [ "$SKIP_DOWNLOAD" != 1 ]; then check_paths; fi
SETTINGS="NIST_TRAIN_ZH=${NIST_TRAIN_ZH-}; NIST_TRAIN_EN=${NIST_TRAIN_EN-}"
for set in "${SETS[@]}"; do
  src=NIST_${set%%:*}_SRC ref=NIST_${set%%:*}_REF
  SETTINGS+="; $src=${!src-}; $ref=${!ref-}"
done
mapfile -t PRODUCTS < <(TREES_DIR=x download_products; parser_products)
exit_if_downloaded "$SETTINGS" "${PRODUCTS[@]}"

mkdir -p "$RAW_DIR"
same_lines "$NIST_TRAIN_ZH" "$NIST_TRAIN_EN"
log "training corpus: $(lines "$NIST_TRAIN_ZH") pairs from $NIST_TRAIN_ZH, $NIST_TRAIN_EN"
# awk 1: a last line without its newline ended
awk 1 "$NIST_TRAIN_ZH" > "$RAW_DIR/train.zh.partial"
awk 1 "$NIST_TRAIN_EN" > "$RAW_DIR/train.en.partial"
for lang in zh en; do replace_if_changed "$RAW_DIR/train.$lang.partial" "$RAW_DIR/train.$lang"; done
for set in "${SETS[@]}"; do
  src=NIST_${set%%:*}_SRC ref=NIST_${set%%:*}_REF
  read -r -a refs <<< "${!ref}"
  test_set_to_raw "${set#*:}" "${!src}" "${refs[@]}"
done
check_raw

fetch_parser_models
mark_done 01_download "$SETTINGS"
