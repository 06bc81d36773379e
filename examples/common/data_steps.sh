# The data steps shared by the recipes (examples/wmt14_en_de, examples/iwslt14_de_en,
# examples/multi30k_en_de, and the Chinese-English ones: nist_zh_en, wmt17_zh_en, iwslt17_zh_en):
# 02 tokenize (a Chinese side: segmented into words), 04 BPE (joint, or one per side), 05 binaries
# and phrase files. Step 03 (the trees: gold trees, or stanza in shards, merged) is in
# parser_steps.sh, the runs of the systems on those data (06-09) in system_steps.sh. Sourced through preamble.sh, after the variables
# are set (the recipe's defaults.sh, then preamble.sh's) and lib.sh; each step_* function reads
# them. Every step leaves a marker in $WORKDIR/.done and skips the work it finds done, so a rerun
# resumes where it stopped.
#
# Files, under WORKDIR (a split: train, valid, or a test set of TEST_SETS):
#   tok/full/{split}.{lang}    Moses-tokenized, cased, every raw line (Chinese: segmented into words)
#   tok/full/{split}.{TGT}.refN  the split's further references (RAW_DIR/{split}.{TGT}.refN), the same way
#   tok/{split}.{lang}         cleaned (CLEAN_SPLITS) and lowercased (LOWERCASE=1; never Chinese): what is binarized
#   tok/cased/{split}.{lang}   with LOWERCASE=1 only: the same lines, cased (what the parser reads)
#   tok/{split}.{SRC}.tree     one tree per line of tok/{split}.{SRC} (step 03)
#   parse/trees/shards/        stanza's parse shards (step 03), merged into parse/trees/
#   bpe/codes.{BPE_MERGES}     joint BPE codes (SEPARATE_VOCAB=1: bpe/codes.{lang}.{BPE_MERGES}, one per side)
#   DATA_BIN                   fairseq binaries + phrase files; the test sets of TEST_SETS as test, test1, ...
# shellcheck shell=bash

read -r -a TEST_NAMES <<< "$TEST_SETS"
SPLITS=(train valid "${TEST_NAMES[@]}")

# cased_dir: where the cleaned, cased text is (the parser's input): tok/cased with LOWERCASE=1, else tok.
cased_dir() { if [ "$LOWERCASE" = 1 ]; then echo "$WORKDIR/tok/cased"; else echo "$WORKDIR/tok"; fi; }

# segment_zh RAW OUT: mgsa-segment-zh (jieba; ZH_T2S=1: Traditional to Simplified first;
# ZH_USER_DICT: the user's dictionary), one line of words for each line of RAW. Run as the module
# the command runs, so that an install made before the command existed (its console script
# missing) segments too.
segment_zh() {
  local opts=()
  [ "$ZH_T2S" = 1 ] && opts+=(--t2s)
  [ -n "$ZH_USER_DICT" ] && opts+=(--user-dict "$ZH_USER_DICT")
  python -m mgsa_preprocess.segment_zh --input "$1" --output "$2" "${opts[@]}"
}

# tokenize_file SPLIT LANG RAW: RAW (the raw text of SPLIT in LANG, or one of its further references)
# into tok/full/ under RAW's name: Chinese segmented into words; any other language Moses-tokenized
# (punctuation normalised for the splits in NORM_SPLITS). Skipped while its marker stands.
tokenize_file() {
  local split=$1 lang=$2 raw=$3 name norm how inputs=("$3") out
  name=$(basename "$raw")
  out=$WORKDIR/tok/full/$name
  if is_zh "$lang"; then
    how="segmented into words, T2S $ZH_T2S, user dictionary ${ZH_USER_DICT:-none}"
    [ -z "$ZH_USER_DICT" ] || inputs+=("$ZH_USER_DICT")
  else
    norm=0
    in_list "$split" "$NORM_SPLITS" && norm=1
    how="normalise $norm, split hyphens $AGGRESSIVE_DASH"
    [ "$lang" != ru ] || how+=", tokens detokenizable (mgsa_preprocess.moses_ru)"
  fi
  is_done "02_tokenize.$name" "$how" "${inputs[@]}" && return 0
  if is_zh "$lang"; then
    log "segmenting $raw into words ($how)"
    rm -f "$out.partial"
    segment_zh "$raw" "$out.partial" || die "segmenting $raw failed (mgsa-segment-zh: see the message above)"
  else
    log "tokenizing $raw ($how)"
    moses_tokenize "$lang" "$WORKERS" "$norm" "$AGGRESSIVE_DASH" < "$raw" > "$out.partial"
  fi
  replace_if_changed "$out.partial" "$out"
  same_lines "$raw" "$out"
  mark_done "02_tokenize.$name" "$how" "${inputs[@]}"
}

# 02: tokenisation of RAW_DIR/{split}.{lang} (and the split's further references) into tok/full:
# Chinese segmented into words by mgsa-segment-zh, once (every later step reads these words:
# BPE, the parser, the trees' leaves), any other language Moses-tokenized; then cleaning of the
# splits in CLEAN_SPLITS (the kept line numbers in {split}.kept beside them), then lowercasing of
# the non-Chinese sides when LOWERCASE=1. A file whose content does not change keeps its time, so
# that a redone step 02 (one split changed) does not make the later steps redo the other splits' work.
step_tokenize() {
  need sacremoses "pip install sacremoses"
  if is_zh "$SRC" || is_zh "$TGT"; then
    python -c 'import mgsa_preprocess.segment_zh, jieba' 2>/dev/null \
      || die "mgsa-segment-zh (mgsa_preprocess.segment_zh, with jieba) does not import: install fairseq-mgsa (bash scripts/install.sh)"
    [ -z "$ZH_USER_DICT" ] || need_files "$ZH_USER_DICT"
  fi
  local split lang ext tok=$WORKDIR/tok cased refs=() ref names
  cased=$(cased_dir)
  mkdir -p "$tok/full" "$cased"
  for split in "${SPLITS[@]}"; do
    need_files "$RAW_DIR/$split.$SRC" "$RAW_DIR/$split.$TGT"
    same_lines "$RAW_DIR/$split.$SRC" "$RAW_DIR/$split.$TGT"
    mapfile -t refs < <(extra_refs "$split")
    if [ "${#refs[@]}" -gt 0 ] && in_list "$split" "$CLEAN_SPLITS"; then
      die "$split has ${#refs[@]} further references ($RAW_DIR/$split.$TGT.ref1 ...): cleaning would drop lines of $RAW_DIR/$split.$TGT alone; leave $split out of CLEAN_SPLITS"
    fi
    for lang in "$SRC" "$TGT"; do tokenize_file "$split" "$lang" "$RAW_DIR/$split.$lang"; done
    for ref in "${refs[@]}"; do same_lines "$RAW_DIR/$split.$TGT" "$ref"; tokenize_file "$split" "$TGT" "$ref"; done
    names=("$split.$SRC" "$split.$TGT")
    for ref in "${refs[@]}"; do names+=("$(basename "$ref")"); done
    if in_list "$split" "$CLEAN_SPLITS"; then
      python "$COMMON_DIR/clean_corpus.py" "$tok/full/$split" "$cased/$split.new" "$SRC" "$TGT" \
        --min-len 1 --max-len "$MAX_LEN" --ratio "$LEN_RATIO"
      for ext in "$SRC" "$TGT" kept; do replace_if_changed "$cased/$split.new.$ext" "$cased/$split.$ext"; done
    else
      for ext in "${names[@]}"; do
        cp "$tok/full/$ext" "$cased/$ext.new"
        replace_if_changed "$cased/$ext.new" "$cased/$ext"
      done
      rm -f "$cased/$split.kept"
    fi
    if [ "$LOWERCASE" = 1 ]; then
      for ext in "${names[@]}"; do
        if is_zh "${ext##*.}" || { [[ "$ext" == *.ref[0-9]* ]] && is_zh "$TGT"; }; then
          cp "$cased/$ext" "$tok/$ext.new"   # Chinese has no case to fold (its Latin words keep theirs)
        else
          lowercase < "$cased/$ext" > "$tok/$ext.new"
        fi
        replace_if_changed "$tok/$ext.new" "$tok/$ext"
      done
    fi
  done
}

# run_tokenize: step 02, redone when a raw file or a setting of the tokenisation changed.
run_tokenize() {
  local inputs=() split settings
  for split in "${SPLITS[@]}"; do
    inputs+=("$RAW_DIR/$split.$SRC" "$RAW_DIR/$split.$TGT")
    mapfile -t -O "${#inputs[@]}" inputs < <(extra_refs "$split")
  done
  settings="NORM_SPLITS=$NORM_SPLITS AGGRESSIVE_DASH=$AGGRESSIVE_DASH LOWERCASE=$LOWERCASE CLEAN_SPLITS=$CLEAN_SPLITS MAX_LEN=$MAX_LEN LEN_RATIO=$LEN_RATIO"
  if is_zh "$SRC" || is_zh "$TGT"; then
    settings+=" ZH_T2S=$ZH_T2S ZH_USER_DICT=$ZH_USER_DICT"
    [ -z "$ZH_USER_DICT" ] || inputs+=("$ZH_USER_DICT")
  fi
  run_step 02_tokenize step_tokenize "$settings" "${inputs[@]}"
}

# bpe_codes LANG: the BPE codes applied to LANG's text: the joint codes, or with SEPARATE_VOCAB=1 LANG's own.
bpe_codes() {
  if [ "$SEPARATE_VOCAB" = 1 ]; then echo "$WORKDIR/bpe/codes.$1.$BPE_MERGES"; else echo "$WORKDIR/bpe/codes.$BPE_MERGES"; fi
}

# 04: BPE codes (subword-nmt) learnt on the training text: joint codes on both sides, or with
# SEPARATE_VOCAB=1 one set of BPE_MERGES merges for each side, learnt on that side alone.
step_bpe() {
  need subword-nmt "pip install subword-nmt"
  need_files "$WORKDIR/tok/train.$SRC" "$WORKDIR/tok/train.$TGT"
  mkdir -p "$WORKDIR/bpe"
  local codes lang
  if [ "$SEPARATE_VOCAB" = 1 ]; then
    for lang in "$SRC" "$TGT"; do
      codes=$(bpe_codes "$lang")
      log "learning $BPE_MERGES BPE merges on $WORKDIR/tok/train.$lang alone"
      subword-nmt learn-bpe --symbols "$BPE_MERGES" < "$WORKDIR/tok/train.$lang" > "$codes.partial"
      mv "$codes.partial" "$codes"
    done
    return 0
  fi
  codes=$(bpe_codes "$SRC")
  log "learning $BPE_MERGES joint BPE merges on $WORKDIR/tok/train.{$SRC,$TGT}"
  cat "$WORKDIR/tok/train.$SRC" "$WORKDIR/tok/train.$TGT" \
    | subword-nmt learn-bpe --symbols "$BPE_MERGES" > "$codes.partial"
  mv "$codes.partial" "$codes"
}

# run_bpe: step 04 (its marker names BPE_MERGES, and "separate" with SEPARATE_VOCAB=1), redone when
# the training text changed.
run_bpe() {
  local name=04_bpe.$BPE_MERGES
  [ "$SEPARATE_VOCAB" = 1 ] && name=04_bpe.separate.$BPE_MERGES
  run_step "$name" step_bpe "" "$WORKDIR/tok/train.$SRC" "$WORKDIR/tok/train.$TGT"
}

# test_prefixes DIR: the test sets of TEST_SETS as mgsa-preprocess's --testpref (DIR/NAME, comma-separated):
# fairseq names them test, test1, test2 ... in DATA_BIN.
test_prefixes() {
  local name out=""
  for name in "${TEST_NAMES[@]}"; do out+="${out:+,}$1/$name"; done
  echo "$out"
}

# fairseq_split SPLIT: the name mgsa-preprocess gives SPLIT's output (its parse shards and trees,
# its binaries): train, valid, and test, test1, ... for the test sets of TEST_SETS in order.
fairseq_split() {
  local i
  for i in "${!TEST_NAMES[@]}"; do
    if [ "${TEST_NAMES[$i]}" = "$1" ]; then test_subset "$i"; return 0; fi
  done
  echo "$1"
}

# dictionary_options: --joined-dictionary (one dictionary, for --share-all-embeddings), or nothing
# with SEPARATE_VOCAB=1 (a dictionary for each side).
dictionary_options() { [ "$SEPARATE_VOCAB" = 1 ] || echo --joined-dictionary; }

# 05: mgsa-preprocess: BPE applied to both sides (the joint codes, or each side's own), a joined
# dictionary (or one per side), fairseq binaries, the phrase files of the top LEVELS tree levels and
# the tag dictionary, into DATA_BIN.
step_preprocess() {
  need mgsa-preprocess "install fairseq-mgsa (bash scripts/install.sh)"
  local tok=$WORKDIR/tok split lenient_flag=() dict_opts=() tgt_codes=()
  [ "$LENIENT" = 1 ] && lenient_flag=(--lenient)
  read -r -a dict_opts <<< "$(dictionary_options)"
  [ "$SEPARATE_VOCAB" = 1 ] && tgt_codes=(--tgt-bpe-codes "$(bpe_codes "$TGT")")
  need_files "$(bpe_codes "$SRC")" "$(bpe_codes "$TGT")"
  for split in "${SPLITS[@]}"; do need_files "$tok/$split.$SRC" "$tok/$split.$TGT" "$tok/$split.$SRC.tree"; done
  # A run that stopped half-way leaves dictionaries that mgsa-preprocess refuses to
  # overwrite: start the binarization afresh.
  rm -f "$DATA_BIN"/dict.*.txt "$DATA_BIN"/*.bin "$DATA_BIN"/*.idx "$DATA_BIN"/preprocess.log
  mkdir -p "$DATA_BIN"
  mgsa-preprocess --source-lang "$SRC" --target-lang "$TGT" \
    --trainpref "$tok/train" --validpref "$tok/valid" --testpref "$(test_prefixes "$tok")" \
    --destdir "$DATA_BIN" "${dict_opts[@]}" --workers "$WORKERS" --no-progress-bar \
    --bpe-codes "$(bpe_codes "$SRC")" "${tgt_codes[@]}" --workdir "$WORKDIR/bpe/text" \
    --trees-suffix tree --levels "$LEVELS" "${lenient_flag[@]}"
}

# 05 when no system of SYSTEMS reads trees: the same BPE (the project's, as mgsa-preprocess
# applies it) into bpe/text, then fairseq-preprocess with the same dictionaries into DATA_BIN; no
# phrase files. The binaries and dictionaries are those step_preprocess makes.
step_preprocess_text() {
  need fairseq-preprocess "install fairseq-mgsa (bash scripts/install.sh)"
  local tok=$WORKDIR/tok text=$WORKDIR/bpe/text split lang dict_opts=()
  read -r -a dict_opts <<< "$(dictionary_options)"
  need_files "$(bpe_codes "$SRC")" "$(bpe_codes "$TGT")"
  for split in "${SPLITS[@]}"; do
    for lang in "$SRC" "$TGT"; do
      need_files "$tok/$split.$lang"
      python -c 'import sys
from mgsa_preprocess.bpe import apply_bpe
apply_bpe(sys.argv[1], sys.argv[2], sys.argv[3], workers=int(sys.argv[4]), progress=False)' \
        "$(bpe_codes "$lang")" "$tok/$split.$lang" "$text/$split.$lang" "$WORKERS" \
        || die "applying $(bpe_codes "$lang") to $tok/$split.$lang failed"
    done
  done
  rm -f "$DATA_BIN"/dict.*.txt "$DATA_BIN"/*.bin "$DATA_BIN"/*.idx "$DATA_BIN"/preprocess.log
  mkdir -p "$DATA_BIN"
  fairseq-preprocess --source-lang "$SRC" --target-lang "$TGT" \
    --trainpref "$text/train" --validpref "$text/valid" --testpref "$(test_prefixes "$text")" \
    --destdir "$DATA_BIN" "${dict_opts[@]}" --workers "$WORKERS"
}

# preprocess_for_systems: step 05 as SYSTEMS need it: with phrase files when one reads trees;
# else without, unless the binaries with phrase files are there already (they serve every system).
# Redone when BPE_MERGES (or LEVELS, LENIENT) or a file it reads changed, or DATA_BIN has no binaries.
preprocess_for_systems() {
  local trees split lang text=() with_trees=() codes=() marker
  trees=$(systems_need_trees) || exit 1
  codes=("$(bpe_codes "$SRC")")
  [ "$SEPARATE_VOCAB" = 1 ] && codes+=("$(bpe_codes "$TGT")")
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
    run_step 05_preprocess step_preprocess "$tree_settings" "${codes[@]}" "${text[@]}" "${with_trees[@]}"
  elif is_done 05_preprocess "$tree_settings" "${codes[@]}" "${text[@]}" "${with_trees[@]}"; then
    log "05_preprocess: done already, with phrase files (no system of '$SYSTEMS' reads them; the binaries serve them all)"
  else
    log "no system of '$SYSTEMS' reads trees: binarizing without phrase files"
    run_step 05_preprocess.text step_preprocess_text "BPE_MERGES=$BPE_MERGES" "${codes[@]}" "${text[@]}"
  fi
}
