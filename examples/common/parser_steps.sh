# Step 03, the constituency trees of the source (step_parse, run_parse: gold trees, or a parser in
# shards, merged; the files: data_steps.sh's list), and the parsers it reads: a parser the recipe
# trains on a treebank (multi30k_en_de; the Chinese recipes with PARSER=treebank), and the Chinese
# recipes' (nist_zh_en, wmt17_zh_en, iwslt17_zh_en) choice of parser, with what step 01 fetches
# for it. Sourced through preamble.sh. Where the trees come from:
#   TREES_DIR set: the user's trees, one per raw line (step_parse below); no parser.
#   PARSER=stanza: stanza's pretrained models for PARSER_LANG (zh-hans for Chinese), fetched by
#     01_download.sh into STANZA_DIR (the model hub needs network).
#   PARSER=treebank: a parser mgsa-train-parser trains on the user's treebank (for Chinese, the
#     Penn Chinese Treebank: PARSER_TRAIN_TREES, PARSER_DEV_TREES, PARSER_TEST_TREES), with word
#     vectors learnt on the segmented training text of step 02, into PARSER_DIR; then used as
#     stanza's models are (mgsa-preprocess --stanza-dir PARSER_DIR).
# shellcheck shell=bash

# 03: constituency trees of the source: tok/{split}.{SRC}.tree, one per line of tok/{split}.{SRC}.
#   TREES_DIR set: gold trees TREES_DIR/{split}.{SRC}.tree (one per raw line, leaves = the Moses
#     tokens, or for Chinese the segmented words) are copied, minus the lines cleaning dropped.
#   Else stanza parses the cased source in NUM_SHARDS shards (mgsa-preprocess --shard-id),
#     PARSE_JOBS at a time, job j on GPU j; the shards are then checked and merged.
# With LOWERCASE=1 the leaves are lowercased after parsing, like the text (not a Chinese source's).
step_parse() {
  local split tok=$WORKDIR/tok cased lc=()
  cased=$(cased_dir)
  if [ "$LOWERCASE" = 1 ] && ! is_zh "$SRC"; then lc=(--lowercase); fi
  if [ -n "$TREES_DIR" ]; then
    # select_trees.py reads the trees through mgsa_preprocess (a Latin-1 byte: one line naming it)
    need mgsa-preprocess "install fairseq-mgsa (bash scripts/install.sh)"
    for split in "${SPLITS[@]}"; do
      need_files "$TREES_DIR/$split.$SRC.tree" "$tok/$split.$SRC"
      local kept=()
      [ -f "$cased/$split.kept" ] && kept=(--kept "$cased/$split.kept")
      python "$COMMON_DIR/select_trees.py" "$TREES_DIR/$split.$SRC.tree" "$tok/$split.$SRC.tree" \
        "${kept[@]}" "${lc[@]}" --expect "$(lines "$tok/full/$split.$SRC")"
    done
    return 0
  fi
  check_parser
  for split in "${SPLITS[@]}"; do need_files "$cased/$split.$SRC"; done
  local n_jobs=$PARSE_JOBS pids=() slot
  [ "$n_jobs" -ge 1 ] || n_jobs=1
  for ((slot = 0; slot < n_jobs; slot++)); do
    (
      for ((i = slot; i < NUM_SHARDS; i += n_jobs)); do parse_shard "$i" "$slot"; done
    ) &
    pids+=($!)
  done
  local failed=0 pid
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  [ "$failed" = 0 ] || die "some parse shards failed (rerun to parse only those)"
  for split in "${SPLITS[@]}"; do
    merge_parse_shards "$cased/$split.$SRC" "$(fairseq_split "$split")"
    python "$COMMON_DIR/select_trees.py" "$WORKDIR/parse/trees/$(fairseq_split "$split").$SRC.tree" "$tok/$split.$SRC.tree" \
      "${lc[@]}" --expect "$(lines "$tok/$split.$SRC")"
  done
}

# parse_inputs: the files step 03 reads (the text it parses, the gold trees, or the parser: a
# trained parser's record and stanza's PARSER_LANG models): a change in one, or another path
# (another TREES_DIR, STANZA_DIR, PARSER_LANG or SRC), redoes the step and its parse shards.
parse_inputs() {
  local split
  for split in "${SPLITS[@]}"; do
    echo "$WORKDIR/tok/$split.$SRC"
    echo "$(cased_dir)/$split.$SRC"
    if [ -n "$TREES_DIR" ]; then echo "$TREES_DIR/$split.$SRC.tree"; fi
  done
  if [ -z "$TREES_DIR" ]; then echo "$STANZA_DIR/mgsa_parser.json"; echo "$STANZA_DIR/$PARSER_LANG"; fi
}

# run_parse: step 03, redone when its inputs (parse_inputs) or where the trees come from changed.
run_parse() {
  local inputs=() from="TREES_DIR=$TREES_DIR"
  mapfile -t inputs < <(parse_inputs)
  [ -n "$TREES_DIR" ] || from="STANZA_DIR=$STANZA_DIR"
  run_step 03_parse step_parse "$from LOWERCASE=$LOWERCASE" "${inputs[@]}"
}

# exit_unless_trees_needed: end 03_parse.sh (status 0) when no system of SYSTEMS reads trees.
exit_unless_trees_needed() {
  local trees
  trees=$(systems_need_trees) || exit 1
  if [ "$trees" = no ]; then
    log "no system of '$SYSTEMS' reads trees: nothing to parse"
    exit 0
  fi
}

# check_parser: stop unless mgsa-preprocess and stanza's constituency model are there.
check_parser() {
  need mgsa-preprocess "install fairseq-mgsa (bash scripts/install.sh)"
  # a model directory mgsa-train-parser wrote (its record mgsa_parser.json), or stanza's downloads
  if [ ! -f "$STANZA_DIR/mgsa_parser.json" ] && [ ! -d "$STANZA_DIR/$PARSER_LANG/constituency" ]; then
    die "no stanza constituency model for '$PARSER_LANG' in $STANZA_DIR: run 01_download.sh on a machine with network (or python -c \"import stanza; stanza.download('$PARSER_LANG', model_dir='$STANZA_DIR', processors='tokenize,pos,constituency')\") and copy $STANZA_DIR here, or give gold trees with TREES_DIR"
  fi
  [[ "$NUM_SHARDS" =~ ^[1-9][0-9]*$ ]] || die "NUM_SHARDS must be a positive number (got '$NUM_SHARDS')"
  parser_warnings "$STANZA_DIR"
}

# parser_warnings DIR: repeat (once a script) the warnings mgsa-train-parser recorded with the
# parser in DIR, if it trained it: a cap (of steps, epochs or time) that cut its training while
# its dev score still rose.
parser_warnings() {
  { [ -f "$1/mgsa_parser.json" ] && [ -z "${PARSER_WARNED:-}" ]; } || return 0
  PARSER_WARNED=1
  python - "$1" "$(basename "$0")" <<'PY' >&2 || true
import json, os, sys
model_dir, script = sys.argv[1:]
with open(os.path.join(model_dir, "mgsa_parser.json"), encoding="utf-8") as f:
    for warning in json.load(f).get("warnings") or []:
        print(f"{script}: warning: the parser in {model_dir}: {warning}")
PY
}

# parse_shard I JOB: stanza parses shard I of NUM_SHARDS of every split (mgsa-preprocess
# --shard-id I, into WORKDIR/parse/trees/shards) on the GPU of parse job JOB (see
# gpu_for_job); a shard parsed before, by this script or by a SHARD_ID run, is skipped.
parse_shard() {
  local i=$1 gpu cased where=CPU inputs=()
  mapfile -t inputs < <(parse_inputs)
  if is_done "03_parse.shard$i-of-$NUM_SHARDS" "" "${inputs[@]}"; then
    log "shard $i of $NUM_SHARDS: parsed already"
    return 0
  fi
  cased=$(cased_dir)
  gpu=$(gpu_for_job "$2")
  [ -n "$gpu" ] && where="GPU $gpu"
  mkdir -p "$WORKDIR/logs"
  log "parsing shard $i of $NUM_SHARDS on $where (log: $WORKDIR/logs/parse.shard$i.log)"
  CUDA_VISIBLE_DEVICES=$gpu mgsa-preprocess \
    --source-lang "$SRC" --target-lang "$TGT" --only-source \
    --trainpref "$cased/train" --validpref "$cased/valid" --testpref "$(test_prefixes "$cased")" \
    --destdir "$WORKDIR/parse" --subword-style none --no-progress-bar \
    --parser stanza --parser-lang "$PARSER_LANG" --stanza-dir "$STANZA_DIR" --stanza-download none \
    --parser-batch-size "$PARSER_BATCH_SIZE" --num-shards "$NUM_SHARDS" --shard-id "$i" \
    > "$WORKDIR/logs/parse.shard$i.log" 2>&1 \
    || die "parsing shard $i failed: see $WORKDIR/logs/parse.shard$i.log"
  mark_done "03_parse.shard$i-of-$NUM_SHARDS" "" "${inputs[@]}"
}

# step_parse_shard_only: SHARD_ID set (one task of a SLURM array): parse that shard and stop;
# 03_parse.sh without SHARD_ID then parses whatever shard is missing and merges.
step_parse_shard_only() {
  [ -z "$TREES_DIR" ] || die "SHARD_ID parses with stanza; with TREES_DIR set there is nothing to parse"
  check_parser
  if ! [[ "$SHARD_ID" =~ ^[0-9]+$ ]] || [ "$SHARD_ID" -ge "$NUM_SHARDS" ]; then
    die "SHARD_ID must be in [0, NUM_SHARDS=$NUM_SHARDS) (got '$SHARD_ID')"
  fi
  need_files "$(cased_dir)/train.$SRC"
  parse_shard "$SHARD_ID" 0
}

# merge_parse_shards SOURCE SPLIT: check the NUM_SHARDS shards of SPLIT (all there, each
# parsed from SOURCE as it is now, one tree per line) and concatenate them into
# WORKDIR/parse/trees/SPLIT.SRC.tree (mgsa-preprocess's own merge).
merge_parse_shards() {
  python - "$1" "$WORKDIR/parse" "$2" "$SRC" "$NUM_SHARDS" "$WORKDIR/.done" <<'PY' || exit 1
import sys
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.parse import merge_shards
src, destdir, split, lang, n, done = sys.argv[1:]
try:
    print(f"merged {n} shards -> {merge_shards(src, destdir, split, lang, int(n))}", file=sys.stderr)
except PreprocessError as e:
    sys.exit(f"03_parse.sh: error: merging the parse shards: {e} (to parse a shard again, delete its marker "
             f"{done}/03_parse.shardI-of-{n})")
PY
}

# gpu_for_job J: the GPU parse job J runs on: the J-th (modulo) of CUDA_VISIBLE_DEVICES
# when that is set (e.g. by SLURM), else of 0..GPUS-1; nothing (CPU) when GPUS=0.
gpu_for_job() {
  local ids=()
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=, read -r -a ids <<< "$CUDA_VISIBLE_DEVICES"
  else
    local g
    for ((g = 0; g < GPUS; g++)); do ids+=("$g"); done
  fi
  [ "${#ids[@]}" -gt 0 ] && echo "${ids[$(($1 % ${#ids[@]}))]}"
  return 0
}

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

# stanza_models_needed: true when step 03 will parse with stanza's own models: PARSER=stanza, no
# TREES_DIR, and a system of SYSTEMS reads trees.
stanza_models_needed() {
  [ -z "$TREES_DIR" ] && [ "$PARSER" = stanza ] && [ "$(systems_need_trees)" = yes ]
}

# parser_products: what step 01 leaves for the parser: stanza's PARSER_LANG models in STANZA_DIR
# when they are needed (stanza_models_needed); one path a line.
parser_products() {
  if stanza_models_needed; then echo "$STANZA_DIR/$PARSER_LANG/constituency"; fi
}

# fetch_parser_models: step 01's part for the parser: stanza's PARSER_LANG models when they are
# needed (the model hub needs network); nothing for a parser trained here, the user's trees, or
# systems that read no trees.
fetch_parser_models() {
  case "$PARSER" in
    stanza|treebank) ;;
    *) die "PARSER must be treebank or stanza (got '$PARSER')" ;;
  esac
  if stanza_models_needed; then fetch_stanza_models; fi
}
