# The choice of parser of the Chinese-English recipes (nist_zh_en, wmt17_zh_en, iwslt17_zh_en):
# what step 01 fetches for it and what step 03 parses with. Sourced through preamble.sh. Where the
# trees come from:
#   TREES_DIR set: the user's trees, one per raw line (data_steps.sh: step_parse); no parser.
#   PARSER=stanza: stanza's pretrained models for PARSER_LANG (zh-hans for Chinese), fetched by
#     01_download.sh into STANZA_DIR (the model hub needs network).
#   PARSER=treebank: a parser mgsa-train-parser trains on the user's treebank (for Chinese, the
#     Penn Chinese Treebank: PARSER_TRAIN_TREES, PARSER_DEV_TREES, PARSER_TEST_TREES), with word
#     vectors learnt on the segmented training text of step 02, into PARSER_DIR; then used as
#     stanza's models are (mgsa-preprocess --stanza-dir PARSER_DIR).
# shellcheck shell=bash

# treebank_parser_settings: the recipe's settings of the parser it trains, kept beside it
# (PARSER_DIR/recipe_settings): a parser trained here with others is refused, not used as if made
# with these (one given from elsewhere, without the file, is used as it is).
treebank_parser_settings() {
  echo "PARSER_TRAIN_TREES=$PARSER_TRAIN_TREES; PARSER_DEV_TREES=$PARSER_DEV_TREES; PARSER_TEST_TREES=$PARSER_TEST_TREES; PARSER_ARGS=$PARSER_ARGS"
}

# train_treebank_parser: mgsa-train-parser --lang SRC on the treebank's three files ->
# PARSER_DIR, unless a complete model is there already (its record mgsa_parser.json and model
# files; delete PARSER_DIR to retrain). mgsa-train-parser builds the model in PARSER_DIR/partial
# and moves it in only once it is complete: a failed run leaves PARSER_DIR's old model as it was.
# Log: WORKDIR/logs/parser.log.
train_treebank_parser() {
  local file missing=() old extra=() test_opt=()
  if [ -f "$PARSER_DIR/mgsa_parser.json" ]; then
    for file in pretrain.pt pos.pt constituency.pt; do [ -s "$PARSER_DIR/$file" ] || missing+=("$file"); done
    if [ "${#missing[@]}" = 0 ]; then
      if [ -f "$PARSER_DIR/recipe_settings" ] && [ "$(cat "$PARSER_DIR/recipe_settings")" != "$(treebank_parser_settings)" ]; then
        old=$(cat "$PARSER_DIR/recipe_settings")
        die "the parser in $PARSER_DIR was trained with other settings ($(settings_change "$old" "$(treebank_parser_settings)")): delete $PARSER_DIR to train it with these, or set them back"
      fi
      log "using the parser trained already in $PARSER_DIR (delete it to retrain)"
      return 0
    fi
    log "$PARSER_DIR/mgsa_parser.json is there but not ${missing[*]}: training the parser again"
  fi
  need mgsa-train-parser "install fairseq-mgsa (bash scripts/install.sh)"
  [ -n "$PARSER_TRAIN_TREES" ] && [ -n "$PARSER_DEV_TREES" ] \
    || die "PARSER=treebank needs the treebank: PARSER_TRAIN_TREES and PARSER_DEV_TREES (and PARSER_TEST_TREES) name its training, dev and test files (README.md: the Penn Chinese Treebank's usual split), or give a trained parser with PARSER_DIR, or PARSER=stanza, or your trees with TREES_DIR"
  need_files "$PARSER_TRAIN_TREES" "$PARSER_DEV_TREES" "$WORKDIR/tok/train.$SRC"
  if [ -n "$PARSER_TEST_TREES" ]; then need_files "$PARSER_TEST_TREES"; test_opt=(--test "$PARSER_TEST_TREES"); fi
  split_words PARSER_ARGS extra
  mkdir -p "$WORKDIR/logs"
  log "training the $SRC parser on $PARSER_TRAIN_TREES (dev $PARSER_DEV_TREES; word vectors from $WORKDIR/tok/train.$SRC) -> $PARSER_DIR (log: $WORKDIR/logs/parser.log)"
  # --unseen-dev-labels drop: a dev tree with a label the training trees lack cannot be scored;
  # it is dropped and counted (in the record) rather than stopping the recipe
  mgsa-train-parser --train "$PARSER_TRAIN_TREES" --dev "$PARSER_DEV_TREES" "${test_opt[@]}" \
    --unseen-dev-labels drop --wordvec-text "$WORKDIR/tok/train.$SRC" --lang "$SRC" --out "$PARSER_DIR" \
    "${extra[@]}" > "$WORKDIR/logs/parser.log" 2>&1 \
    || die "mgsa-train-parser failed: $(tail -n 1 "$WORKDIR/logs/parser.log") (log: $WORKDIR/logs/parser.log)"
  treebank_parser_settings > "$PARSER_DIR/recipe_settings"
}

# parser_test_score: the test-split score of the parser in PARSER_DIR (from its record) ->
# PARSER_DIR/test_f1.txt, and on stderr.
parser_test_score() {
  python - "$PARSER_DIR" <<'PY' || exit 1
import json, os, sys
d = sys.argv[1]
rec = json.load(open(os.path.join(d, "mgsa_parser.json"), encoding="utf-8"))
test = rec.get("test")
if isinstance(test, dict) and "f1" in test:
    evalb = test.get("evalb", {}).get("f1")
    line = (f"parser {d}: labeled-bracket F1 {test['f1']:.2f}"
            + (f" (evalb convention {evalb:.2f})" if evalb is not None else "")
            + f" on the test split {test.get('file', '')}")
else:
    line = f"parser {d}: no test score in its record (trained without a test split)"
open(os.path.join(d, "test_f1.txt"), "w", encoding="utf-8").write(line + "\n")
print(line, file=sys.stderr)
PY
}

# choose_parser: with PARSER=treebank, the parser trained (or found) in PARSER_DIR becomes the
# models step 03 parses with (STANZA_DIR=PARSER_DIR); with PARSER=stanza, stanza's own in STANZA_DIR.
# Nothing with TREES_DIR (the user's trees).
choose_parser() {
  [ -z "$TREES_DIR" ] || return 0
  case "$PARSER" in
    treebank) train_treebank_parser; parser_test_score; parser_warnings "$PARSER_DIR"; STANZA_DIR=$PARSER_DIR ;;
    stanza) ;;
    *) die "PARSER must be treebank or stanza (got '$PARSER')" ;;
  esac
}

# parser_products: what step 01 leaves for the parser: stanza's PARSER_LANG models in STANZA_DIR
# with PARSER=stanza (none with TREES_DIR or PARSER=treebank); one path a line.
parser_products() {
  if [ -z "$TREES_DIR" ] && [ "$PARSER" = stanza ]; then echo "$STANZA_DIR/$PARSER_LANG/constituency"; fi
}

# fetch_parser_models: step 01's part for the parser: stanza's PARSER_LANG models with PARSER=stanza
# (the model hub needs network); nothing for a parser trained here or the user's trees.
fetch_parser_models() {
  case "$PARSER" in
    stanza|treebank) ;;
    *) die "PARSER must be treebank or stanza (got '$PARSER')" ;;
  esac
  if [ -z "$TREES_DIR" ] && [ "$PARSER" = stanza ]; then fetch_stanza_models; fi
}
