#!/usr/bin/env bash
# Step 3: constituency trees of the English side -> WORKDIR/tok/{split}.en.tree, one per line.
#   PARSER=treebank (the default): the recipe's own English parser. Unless PARSER_DIR holds a
#     trained model already (its mgsa_parser.json and model files; delete the directory to retrain), the treebank
#     of step 1 is split in file order (examples/common/split_treebank.py: the last 400 trees the
#     test split, the 400 before them dev, the rest train: 3,114 on NLTK's WSJ sample), and
#     mgsa-train-parser trains stanza's tagger and parser on it, with word vectors learnt (gensim
#     word2vec) on the tokenized English training text of step 2, and scores the final model on
#     the test split (PARSER_DIR/mgsa_parser.json, and PARSER_DIR/test_f1.txt). Log: logs/parser.log.
#   PARSER=stanza: stanza's pretrained English models (fetched in step 1) in STANZA_DIR.
#   Then mgsa-preprocess --parser stanza parses the cased, tokenized English of every split (one
#   thread; NUM_SHARDS shards, PARSE_JOBS at a time).
#   TREES_DIR set: gold trees TREES_DIR/{split}.en.tree instead, no parser.
#   Skipped when no system of SYSTEMS reads trees.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
GPUS=${GPUS:-$(num_gpus)}                             # GPUs to parse on (0: CPU)
PARSE_JOBS=${PARSE_JOBS:-$((GPUS > 0 ? GPUS : 1))}    # shards parsed at the same time
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}          # stanza is slower with two threads on a busy machine

# step_train_parser: split the treebank, train the parser into PARSER_DIR (unless a complete one is
# there). mgsa-train-parser builds the model in PARSER_DIR/partial and moves it into PARSER_DIR only
# once it is complete: PARSER_DIR may be an existing (empty) folder, and a failed run leaves
# PARSER_DIR's old model, if any, as it was.
# The recipe's settings of the parser it trains, kept beside it (PARSER_DIR/recipe_settings): a
# parser trained here with others is refused, not used as if made with these (one given from
# elsewhere, without the file, is used as it is).
parser_settings() { echo "PARSER_DEV=$PARSER_DEV; PARSER_TEST=$PARSER_TEST; PARSER_ARGS=$PARSER_ARGS"; }

step_train_parser() {
  local file missing=() old split_settings=$TREEBANK_DIR/split/settings
  if [ -f "$PARSER_DIR/mgsa_parser.json" ]; then
    for file in pretrain.pt pos.pt constituency.pt; do [ -s "$PARSER_DIR/$file" ] || missing+=("$file"); done
    if [ "${#missing[@]}" = 0 ]; then
      if [ -f "$PARSER_DIR/recipe_settings" ] && [ "$(cat "$PARSER_DIR/recipe_settings")" != "$(parser_settings)" ]; then
        old=$(cat "$PARSER_DIR/recipe_settings")
        die "the parser in $PARSER_DIR was trained with other settings ($(settings_change "$old" "$(parser_settings)")): delete $PARSER_DIR to train it with these, or set them back"
      fi
      log "using the parser trained already in $PARSER_DIR (delete it to retrain)"
      return 0
    fi
    log "$PARSER_DIR/mgsa_parser.json is there but not ${missing[*]}: training the parser again"
  fi
  need mgsa-train-parser "install fairseq-mgsa (bash scripts/install.sh)"
  local split=$TREEBANK_DIR/split extra=()
  need_files "$WORKDIR/tok/train.$SRC"
  # the split is made again when PARSER_DEV or PARSER_TEST changed since
  if [ ! -s "$split/test.mrg" ] || [ "$(cat "$split_settings" 2>/dev/null)" != "PARSER_DEV=$PARSER_DEV; PARSER_TEST=$PARSER_TEST" ]; then
    [ -d "$TREEBANK_DIR/treebank/combined" ] \
      || die "no treebank in $TREEBANK_DIR/treebank/combined: run 01_download.sh (or give a trained parser with PARSER_DIR, or PARSER=stanza)"
    python "$COMMON_DIR/split_treebank.py" --trees "$TREEBANK_DIR/treebank/combined" --out "$split" \
      --dev "$PARSER_DEV" --test "$PARSER_TEST"
    echo "PARSER_DEV=$PARSER_DEV; PARSER_TEST=$PARSER_TEST" > "$split_settings"
  fi
  split_words PARSER_ARGS extra
  mkdir -p "$WORKDIR/logs"
  log "training the English parser on $split/train.mrg (dev, test: $split/{dev,test}.mrg; word vectors from $WORKDIR/tok/train.$SRC) -> $PARSER_DIR (log: $WORKDIR/logs/parser.log)"
  # --unseen-dev-labels drop: the WSJ sample's dev split (file order) has one tree with a label
  # (WHADJP) its training split lacks; the parser cannot score it, so it is dropped and counted
  mgsa-train-parser --train "$split/train.mrg" --dev "$split/dev.mrg" --test "$split/test.mrg" \
    --unseen-dev-labels drop --wordvec-text "$WORKDIR/tok/train.$SRC" --lang "$SRC" --out "$PARSER_DIR" "${extra[@]}" \
    > "$WORKDIR/logs/parser.log" 2>&1 \
    || die "mgsa-train-parser failed: $(tail -n 1 "$WORKDIR/logs/parser.log") (log: $WORKDIR/logs/parser.log)"
  parser_settings > "$PARSER_DIR/recipe_settings"
}

exit_unless_trees_needed
if [ -z "$TREES_DIR" ]; then
  case "$PARSER" in
    treebank) step_train_parser; parser_test_score; parser_warnings "$PARSER_DIR"; STANZA_DIR=$PARSER_DIR ;;
    stanza) ;;
    *) die "PARSER must be treebank or stanza (got '$PARSER')" ;;
  esac
fi
if [ -n "$SHARD_ID" ]; then step_parse_shard_only; else run_parse; fi
