# The data steps shared by the recipes (examples/wmt14_en_de, examples/iwslt14_de_en,
# examples/multi30k_en_de): 02 tokenize, 03 parse (gold trees, or stanza in shards, merged),
# 04 BPE, 05 binaries and phrase files. The runs of the systems on those data (06-09) are in
# system_steps.sh. Sourced through preamble.sh, after the variables are set (the recipe's
# defaults.sh, then preamble.sh's) and lib.sh; each step_* function reads them. Every step leaves
# a marker in $WORKDIR/.done and skips the work it finds done, so a rerun resumes where it stopped.
#
# Files, under WORKDIR:
#   tok/full/{split}.{lang}    Moses-tokenized, cased, every raw line
#   tok/{split}.{lang}         cleaned (CLEAN_SPLITS) and lowercased (LOWERCASE=1): what is binarized
#   tok/cased/{split}.{lang}   with LOWERCASE=1 only: the same lines, cased (what the parser reads)
#   tok/{split}.{SRC}.tree     one tree per line of tok/{split}.{SRC} (step 03)
#   parse/trees/shards/        stanza's parse shards (step 03), merged into parse/trees/
#   bpe/codes.{BPE_MERGES}     joint BPE codes; DATA_BIN: fairseq binaries + phrase files
# shellcheck shell=bash

SPLITS=(train valid test)

# cased_dir: where the cleaned, cased text is (the parser's input): tok/cased with LOWERCASE=1, else tok.
cased_dir() { if [ "$LOWERCASE" = 1 ]; then echo "$WORKDIR/tok/cased"; else echo "$WORKDIR/tok"; fi; }

# 02: Moses tokenisation of RAW_DIR/{split}.{lang} into tok/full (punctuation normalised for
# the splits in NORM_SPLITS), then cleaning of the splits in CLEAN_SPLITS (the kept line
# numbers in {split}.kept beside them), then lowercasing when LOWERCASE=1. A file whose content
# does not change keeps its time, so that a redone step 02 (one split changed) does not make the
# later steps redo the other splits' work.
step_tokenize() {
  need sacremoses "pip install sacremoses"
  local split lang norm how ext tok=$WORKDIR/tok cased
  cased=$(cased_dir)
  mkdir -p "$tok/full" "$cased"
  for split in "${SPLITS[@]}"; do
    need_files "$RAW_DIR/$split.$SRC" "$RAW_DIR/$split.$TGT"
    same_lines "$RAW_DIR/$split.$SRC" "$RAW_DIR/$split.$TGT"
    for lang in "$SRC" "$TGT"; do
      norm=0
      in_list "$split" "$NORM_SPLITS" && norm=1
      how="normalise $norm, split hyphens $AGGRESSIVE_DASH"
      is_done "02_tokenize.$split.$lang" "$how" "$RAW_DIR/$split.$lang" && continue
      log "tokenizing $RAW_DIR/$split.$lang ($how)"
      moses_tokenize "$lang" "$WORKERS" "$norm" "$AGGRESSIVE_DASH" < "$RAW_DIR/$split.$lang" \
        > "$tok/full/$split.$lang.partial"
      replace_if_changed "$tok/full/$split.$lang.partial" "$tok/full/$split.$lang"
      same_lines "$RAW_DIR/$split.$lang" "$tok/full/$split.$lang"
      mark_done "02_tokenize.$split.$lang" "$how" "$RAW_DIR/$split.$lang"
    done
    if in_list "$split" "$CLEAN_SPLITS"; then
      python "$COMMON_DIR/clean_corpus.py" "$tok/full/$split" "$cased/$split.new" "$SRC" "$TGT" \
        --min-len 1 --max-len "$MAX_LEN" --ratio "$LEN_RATIO"
      for ext in "$SRC" "$TGT" kept; do replace_if_changed "$cased/$split.new.$ext" "$cased/$split.$ext"; done
    else
      for lang in "$SRC" "$TGT"; do
        cp "$tok/full/$split.$lang" "$cased/$split.$lang.new"
        replace_if_changed "$cased/$split.$lang.new" "$cased/$split.$lang"
      done
      rm -f "$cased/$split.kept"
    fi
    if [ "$LOWERCASE" = 1 ]; then
      for lang in "$SRC" "$TGT"; do
        lowercase < "$cased/$split.$lang" > "$tok/$split.$lang.new"
        replace_if_changed "$tok/$split.$lang.new" "$tok/$split.$lang"
      done
    fi
  done
}

# run_tokenize: step 02, redone when a raw file or a setting of the tokenisation changed.
run_tokenize() {
  local inputs=() split
  for split in "${SPLITS[@]}"; do inputs+=("$RAW_DIR/$split.$SRC" "$RAW_DIR/$split.$TGT"); done
  run_step 02_tokenize step_tokenize "NORM_SPLITS=$NORM_SPLITS AGGRESSIVE_DASH=$AGGRESSIVE_DASH LOWERCASE=$LOWERCASE CLEAN_SPLITS=$CLEAN_SPLITS MAX_LEN=$MAX_LEN LEN_RATIO=$LEN_RATIO" "${inputs[@]}"
}

# 03: constituency trees of the source: tok/{split}.{SRC}.tree, one per line of tok/{split}.{SRC}.
#   TREES_DIR set: gold trees TREES_DIR/{split}.{SRC}.tree (one per raw line, leaves = the Moses
#     tokens) are copied, minus the lines cleaning dropped.
#   Else stanza parses the cased source in NUM_SHARDS shards (mgsa-preprocess --shard-id),
#     PARSE_JOBS at a time, job j on GPU j; the shards are then checked and merged.
# With LOWERCASE=1 the leaves are lowercased after parsing, like the text.
step_parse() {
  local split tok=$WORKDIR/tok cased lc=()
  cased=$(cased_dir)
  [ "$LOWERCASE" = 1 ] && lc=(--lowercase)
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
    merge_parse_shards "$cased/$split.$SRC" "$split"
    python "$COMMON_DIR/select_trees.py" "$WORKDIR/parse/trees/$split.$SRC.tree" "$tok/$split.$SRC.tree" \
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
    --trainpref "$cased/train" --validpref "$cased/valid" --testpref "$cased/test" \
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

# 04: joint BPE codes learnt on the source and target training text (subword-nmt).
step_bpe() {
  need subword-nmt "pip install subword-nmt"
  need_files "$WORKDIR/tok/train.$SRC" "$WORKDIR/tok/train.$TGT"
  mkdir -p "$WORKDIR/bpe"
  local codes=$WORKDIR/bpe/codes.$BPE_MERGES
  log "learning $BPE_MERGES joint BPE merges on $WORKDIR/tok/train.{$SRC,$TGT}"
  cat "$WORKDIR/tok/train.$SRC" "$WORKDIR/tok/train.$TGT" \
    | subword-nmt learn-bpe --symbols "$BPE_MERGES" > "$codes.partial"
  mv "$codes.partial" "$codes"
}

# run_bpe: step 04 (its marker names BPE_MERGES), redone when the training text changed.
run_bpe() {
  run_step "04_bpe.$BPE_MERGES" step_bpe "" "$WORKDIR/tok/train.$SRC" "$WORKDIR/tok/train.$TGT"
}

# 05: mgsa-preprocess: BPE applied to both sides, a joined dictionary, fairseq binaries,
# the phrase files of the top LEVELS tree levels and the tag dictionary, into DATA_BIN.
step_preprocess() {
  need mgsa-preprocess "install fairseq-mgsa (bash scripts/install.sh)"
  local tok=$WORKDIR/tok split lenient_flag=()
  [ "$LENIENT" = 1 ] && lenient_flag=(--lenient)
  need_files "$WORKDIR/bpe/codes.$BPE_MERGES"
  for split in "${SPLITS[@]}"; do need_files "$tok/$split.$SRC" "$tok/$split.$TGT" "$tok/$split.$SRC.tree"; done
  # A run that stopped half-way leaves dictionaries that mgsa-preprocess refuses to
  # overwrite: start the binarization afresh.
  rm -f "$DATA_BIN"/dict.*.txt "$DATA_BIN"/*.bin "$DATA_BIN"/*.idx "$DATA_BIN"/preprocess.log
  mkdir -p "$DATA_BIN"
  mgsa-preprocess --source-lang "$SRC" --target-lang "$TGT" \
    --trainpref "$tok/train" --validpref "$tok/valid" --testpref "$tok/test" \
    --destdir "$DATA_BIN" --joined-dictionary --workers "$WORKERS" --no-progress-bar \
    --bpe-codes "$WORKDIR/bpe/codes.$BPE_MERGES" --workdir "$WORKDIR/bpe/text" \
    --trees-suffix tree --levels "$LEVELS" "${lenient_flag[@]}"
}

# 05 when no system of SYSTEMS reads trees: the same BPE (the project's, as mgsa-preprocess
# applies it) into bpe/text, then fairseq-preprocess with a joined dictionary into DATA_BIN; no
# phrase files. The binaries and dictionary are those step_preprocess makes.
step_preprocess_text() {
  need fairseq-preprocess "install fairseq-mgsa (bash scripts/install.sh)"
  local tok=$WORKDIR/tok text=$WORKDIR/bpe/text split lang
  need_files "$WORKDIR/bpe/codes.$BPE_MERGES"
  for split in "${SPLITS[@]}"; do
    for lang in "$SRC" "$TGT"; do
      need_files "$tok/$split.$lang"
      python -c 'import sys
from mgsa_preprocess.bpe import apply_bpe
apply_bpe(sys.argv[1], sys.argv[2], sys.argv[3], workers=int(sys.argv[4]), progress=False)' \
        "$WORKDIR/bpe/codes.$BPE_MERGES" "$tok/$split.$lang" "$text/$split.$lang" "$WORKERS" \
        || die "applying $WORKDIR/bpe/codes.$BPE_MERGES to $tok/$split.$lang failed"
    done
  done
  rm -f "$DATA_BIN"/dict.*.txt "$DATA_BIN"/*.bin "$DATA_BIN"/*.idx "$DATA_BIN"/preprocess.log
  mkdir -p "$DATA_BIN"
  fairseq-preprocess --source-lang "$SRC" --target-lang "$TGT" \
    --trainpref "$text/train" --validpref "$text/valid" --testpref "$text/test" \
    --destdir "$DATA_BIN" --joined-dictionary --workers "$WORKERS"
}

# preprocess_for_systems: step 05 as SYSTEMS need it: with phrase files when one reads trees;
# else without, unless the binaries with phrase files are there already (they serve every system).
# Redone when BPE_MERGES (or LEVELS, LENIENT) or a file it reads changed, or DATA_BIN has no binaries.
preprocess_for_systems() {
  local trees split lang text=() with_trees=() codes=$WORKDIR/bpe/codes.$BPE_MERGES marker
  trees=$(systems_need_trees) || exit 1
  for split in "${SPLITS[@]}"; do
    for lang in "$SRC" "$TGT"; do text+=("$WORKDIR/tok/$split.$lang"); done
    with_trees+=("$WORKDIR/tok/$split.$SRC.tree")
  done
  if [ ! -f "$DATA_BIN/dict.$SRC.txt" ]; then  # a marker of binaries made in another DATA_BIN
    for marker in 05_preprocess 05_preprocess.text; do rm -f "$WORKDIR/.done/$marker"; done
  fi
  local tree_settings="BPE_MERGES=$BPE_MERGES LEVELS=$LEVELS LENIENT=$LENIENT"
  # the binaries' place among the files: binaries kept in another DATA_BIN are not these
  text+=("$DATA_BIN/dict.$SRC.txt")
  if [ "$trees" = yes ]; then
    run_step 05_preprocess step_preprocess "$tree_settings" "$codes" "${text[@]}" "${with_trees[@]}"
  elif is_done 05_preprocess "$tree_settings" "$codes" "${text[@]}" "${with_trees[@]}"; then
    log "05_preprocess: done already, with phrase files (no system of '$SYSTEMS' reads them; the binaries serve them all)"
  else
    log "no system of '$SYSTEMS' reads trees: binarizing without phrase files"
    run_step 05_preprocess.text step_preprocess_text "BPE_MERGES=$BPE_MERGES" "$codes" "${text[@]}"
  fi
}
