# Shared helpers of the recipes in examples/*/ (sourced, not run).
# shellcheck shell=bash

COMMON_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export COMMON_DIR

# log MSG...: a progress line on stderr, prefixed with the calling script's name.
log() { echo "[$(basename "$0")] $*" >&2; }

# die MSG...: one line on stderr, exit 1.
die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

# need CMD [HINT]: stop unless CMD is on PATH (the hint says how to get it).
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found${2:+: $2}"; }

# Step markers, for resuming: a step (or part of one) that finished leaves $WORKDIR/.done/NAME,
# the date, the settings it was made with (e.g. "BPE_MERGES=8000 LEVELS=3") and the paths of the
# input files it read. It is done while its marker is there, made with the same settings from
# the same files (RAW_DIR, TREES_DIR, SRC-TGT ... name them), and none of those files is newer
# than the marker; otherwise a rerun redoes it and says why. Delete the marker to redo it anyway.
# (A marker without a settings or inputs line, written before they were recorded, matches any.)
# SETTINGS written "NAME=value; NAME=value; ..." (values may hold spaces) are told apart by name:
# the reason names only those that changed.
#   stale_reason NAME [SETTINGS [INPUT...]]: why the marker no longer stands (nothing when it does or is absent)
#   is_done NAME [SETTINGS [INPUT...]]; mark_done NAME [SETTINGS [INPUT...]]
stale_reason() {
  local marker=$WORKDIR/.done/$1 settings=${2-} old f i was=() now=()
  [ -f "$marker" ] || return 0
  shift
  [ $# -gt 0 ] && shift
  if [ "$(wc -l < "$marker")" -ge 2 ]; then
    old=$(sed -n 2p "$marker")
    [ "$old" = "$settings" ] || { echo "made with $(settings_change "$old" "$settings")"; return 0; }
  fi
  if [ "$(wc -l < "$marker")" -ge 3 ]; then
    mapfile -t was < <(sed -n '3,$p' "$marker")
    mapfile -t now < <(marker_paths "$@")
    if [ "${was[*]}" != "${now[*]}" ]; then
      for ((i = 0; i < ${#was[@]} || i < ${#now[@]}; i++)); do
        if [ "${was[i]-}" != "${now[i]-}" ]; then echo "made from ${was[i]:-fewer files}, now ${now[i]:-fewer files}"; return 0; fi
      done
    fi
  fi
  for f in "$@"; do
    if [ "$f" -nt "$marker" ]; then echo "$f changed since"; return 0; fi
  done
}
# settings_change OLD NEW: "OLD, now NEW"; for settings written "NAME=value; ...", only the
# NAMEs whose value differs ("SEED=1, now SEED=2").
settings_change() {
  if [[ "$1" != *"; "* && "$2" != *"; "* ]]; then echo "${1:-no settings}, now ${2:-none}"; return; fi
  awk -v old="$1" -v new="$2" 'function parse(s, into, order,   n, i, items, k) {
      n = split(s, items, "; ")
      for (i = 1; i <= n; i++) { k = items[i]; sub(/=.*/, "", k); into[k] = items[i]; order[++order[0]] = k }
    }
    BEGIN {
      parse(old, a, ka); parse(new, b, kb)
      for (i = 1; i <= ka[0]; i++) {
        k = ka[i]
        if (!(k in b)) { was = was sep a[k]; now = now sep k " not set"; sep = "; " }
        else if (a[k] != b[k]) { was = was sep a[k]; now = now sep b[k]; sep = "; " }
      }
      for (i = 1; i <= kb[0]; i++) { k = kb[i]; if (!(k in a)) { was = was sep k " not set"; now = now sep b[k]; sep = "; " } }
      print was ", now " now
    }'
}
is_done() { [ -f "$WORKDIR/.done/$1" ] && [ -z "$(stale_reason "$@")" ]; }
mark_done() {
  local name=$1 settings=${2-}
  shift
  [ $# -gt 0 ] && shift
  mkdir -p "$WORKDIR/.done" && { date; printf '%s\n' "$settings"; [ $# = 0 ] || marker_paths "$@"; } > "$WORKDIR/.done/$name"
}
# marker_paths PATH...: one a line, those inside WORKDIR relative to it (a WORKDIR moved or copied
# elsewhere keeps its markers).
marker_paths() {
  local f
  for f in "$@"; do
    case $f in "$WORKDIR"/*) echo "${f#"$WORKDIR"/}" ;; *) echo "$f" ;; esac
  done
}

# run_step NAME FUNCTION [SETTINGS [INPUT...]]: run FUNCTION unless step NAME is done with these
# SETTINGS and INPUT files (see is_done); mark it done after.
run_step() {
  local name=$1 fn=$2 reason
  shift 2
  if [ -f "$WORKDIR/.done/$name" ]; then
    reason=$(stale_reason "$name" "$@")
    if [ -z "$reason" ]; then
      log "$name: done already (delete $WORKDIR/.done/$name to redo it)"
      return 0
    fi
    log "$name: redoing it: $reason"
    rm -f "$WORKDIR/.done/$name"
  fi
  "$fn"
  mark_done "$name" "$@"
  log "$name: done"
}

# replace_if_changed NEW TARGET: move NEW onto TARGET unless TARGET has the same bytes already
# (then NEW is deleted): TARGET keeps its time, so the steps that read it are not redone.
replace_if_changed() {
  if cmp -s "$1" "$2"; then rm -f "$1"; else mv "$1" "$2"; fi
}

# lines FILE: number of lines, a last line without its final newline counted too (wc -l would not).
lines() { awk 'END { print NR }' "$1"; }

# same_lines A B: stop unless A and B have the same number of lines.
same_lines() {
  local a b
  a=$(lines "$1"); b=$(lines "$2")
  [ "$a" = "$b" ] || die "$1 has $a lines but $2 has $b: the two sides must be parallel"
}

# need_files FILE...: stop naming the first missing file.
need_files() {
  local f
  for f in "$@"; do [ -s "$f" ] || die "$f not found (or empty)"; done
}

# download_products: what 01_download.sh leaves: the raw splits in RAW_DIR, and stanza's
# PARSER_LANG models in STANZA_DIR unless gold trees are given (TREES_DIR); one path a line.
download_products() {
  local split lang
  for split in "${SPLITS[@]}"; do for lang in "$SRC" "$TGT"; do echo "$RAW_DIR/$split.$lang"; done; done
  [ -n "$TREES_DIR" ] || echo "$STANZA_DIR/$PARSER_LANG/constituency"
}

# check_raw: stop unless RAW_DIR holds the parallel splits {train,valid,TEST_SETS}.{SRC,TGT} (and
# each further reference of a split as long as it); log their sizes.
check_raw() {
  local split lang ref sizes=""
  for split in "${SPLITS[@]}"; do
    for lang in "$SRC" "$TGT"; do need_files "$RAW_DIR/$split.$lang"; done
    same_lines "$RAW_DIR/$split.$SRC" "$RAW_DIR/$split.$TGT"
    for ref in $(extra_refs "$split"); do same_lines "$RAW_DIR/$split.$TGT" "$ref"; done
    sizes+="${sizes:+, }$(lines "$RAW_DIR/$split.$SRC") $split"
  done
  log "raw corpus in $RAW_DIR: $sizes pairs"
}

# extra_refs SPLIT: the further references of SPLIT beyond RAW_DIR/SPLIT.TGT, one path a line:
# RAW_DIR/SPLIT.TGT.ref1, .ref2, ... as long as they follow each other.
extra_refs() {
  local i=1
  while [ -f "$RAW_DIR/$1.$TGT.ref$i" ]; do echo "$RAW_DIR/$1.$TGT.ref$i"; i=$((i + 1)); done
}

# test_subset I: fairseq's name of the I-th (from 0) test set of TEST_SETS in DATA_BIN: test, test1, test2 ...
test_subset() { if [ "$1" = 0 ]; then echo test; else echo "test$1"; fi; }

# is_zh LANG: true for Chinese, the language whose text is segmented into words (step 02) instead
# of Moses-tokenized, and never lowercased.
is_zh() { [ "$1" = zh ]; }

# exit_if_downloaded [SETTINGS [PRODUCT...]]: end the download script (status 0) when
# SKIP_DOWNLOAD=1 (after checking RAW_DIR) or when the download is done already with the same
# SETTINGS (the recipe's choice of files, e.g. "MULTI30K_TEST=test_2016_flickr") and every
# PRODUCT (a file or folder it writes: RAW_DIR's, the parser's models) is there, where the
# settings now put it; the script marks it done with them.
exit_if_downloaded() {
  local reason f
  if [ "$SKIP_DOWNLOAD" = 1 ]; then
    log "SKIP_DOWNLOAD=1: using the files in $RAW_DIR"
    check_raw
    exit 0
  fi
  if [ -f "$WORKDIR/.done/01_download" ]; then
    reason=$(stale_reason 01_download "${1-}")
    if [ -z "$reason" ] && [ $# -gt 1 ]; then
      for f in "${@:2}"; do [ -e "$f" ] || { reason="$f is not there"; break; }; done
    fi
    if [ -z "$reason" ]; then
      log "01_download: done already (delete $WORKDIR/.done/01_download to redo it)"
      exit 0
    fi
    log "01_download: redoing it: $reason"
    rm -f "$WORKDIR/.done/01_download"
  fi
}

# fetch_stanza_models: stanza's PARSER_LANG models (tokenize, pos, constituency) into STANZA_DIR;
# on failure one line with the cause (stanza's own output, tracebacks included, is kept in
# STANZA_DIR/download.log).
fetch_stanza_models() {
  local why
  log "fetching stanza's $PARSER_LANG models (tokenize, pos, constituency) into $STANZA_DIR"
  mkdir -p "$STANZA_DIR"
  if ! python - "$PARSER_LANG" "$STANZA_DIR" > "$STANZA_DIR/download.log" 2>&1 <<'PY'; then
import sys
import traceback
import stanza
try:
    stanza.download(sys.argv[1], model_dir=sys.argv[2], processors="tokenize,pos,constituency")
except Exception as e:
    traceback.print_exc()  # into the log; the last line is the cause
    cause = e
    while cause.__context__ is not None and not str(cause):
        cause = cause.__context__
    sys.exit(f"{type(e).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}")
PY
    why=$(tail -n 1 "$STANZA_DIR/download.log")
    die "could not fetch stanza's models for '$PARSER_LANG' (the model hub needs network): ${why} (log: $STANZA_DIR/download.log)"
  fi
}

# num_gpus: the GPUs this job may use: those CUDA_VISIBLE_DEVICES names when it is set (as
# SLURM does; empty: none), else those nvidia-smi lists (0 without nvidia-smi).
num_gpus() {
  if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    local ids=()
    IFS=, read -r -a ids <<< "$CUDA_VISIBLE_DEVICES"
    echo "${#ids[@]}"
  elif command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
  else
    echo 0
  fi
}

# has_cuda: true when torch sees a GPU.
has_cuda() { python -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; }

# fetch URL DEST: download with short timeouts (resumes a partial file); one line naming the URL on failure.
fetch() {
  local url=$1 dest=$2
  [ -s "$dest" ] && { log "have $dest"; return 0; }
  log "fetching $url"
  if ! curl -fsSL --connect-timeout "${CONNECT_TIMEOUT:-10}" --retry 2 --retry-delay 2 -C - \
      -o "$dest.part" "$url"; then
    die "could not fetch $url (network unreachable or file moved): rerun to resume, or get the raw files elsewhere and run with SKIP_DOWNLOAD=1 RAW_DIR=<their folder>"
  fi
  mv "$dest.part" "$dest"
}

# fetch_and_extract DIR URL...: each URL's archive fetched into DIR (a partial download resumed, a
# finished one kept) and unpacked there once (an .extracted mark), after one check that the first
# URL's host answers.
fetch_and_extract() {
  local dir=$1 url archive
  shift
  need curl "install curl, or fetch the data elsewhere and run with SKIP_DOWNLOAD=1 RAW_DIR=<its folder>"
  check_network "$1"
  mkdir -p "$dir"
  for url in "$@"; do
    archive=$dir/$(basename "$url")
    fetch "$url" "$archive"
    if [ ! -f "$archive.extracted" ]; then
      tar -xzf "$archive" -C "$dir" || die "$archive: cannot extract (a broken download? delete it and rerun)"
      touch "$archive.extracted"
    fi
  done
}

# check_network URL: fail fast, before anything else, when URL's host cannot be reached.
check_network() {
  curl -sS -o /dev/null -I --connect-timeout "${CONNECT_TIMEOUT:-10}" --max-time "${CHECK_TIMEOUT:-20}" "$1" 2>/dev/null \
    || die "cannot reach $1 (no network?): run this step on a machine with network and copy its RAW_DIR here, then run with SKIP_DOWNLOAD=1 RAW_DIR=<that folder> (and STANZA_DIR=<stanza models> or TREES_DIR=<trees>)"
}

# in_list WORD LIST: true when WORD is one of the space-separated words of LIST.
in_list() { [[ " $2 " == *" $1 "* ]]; }

# moses_tokenize LANG WORKERS NORMALIZE AGGRESSIVE < raw > tokenized: the Moses pipeline of
# fairseq's data preparation, done with sacremoses. NORMALIZE=1: punctuation normalisation and
# control characters removed (as fairseq does for WMT training text); NORMALIZE=0: only the
# curly apostrophe made straight (as fairseq does for test sets). AGGRESSIVE=1: hyphens split
# ("a-b" -> "a @-@ b", tokenizer.perl -a). Moses escapes are kept (&amp; &apos; ...).
#
# Russian: python -m mgsa_preprocess.moses_ru, sacremoses' tokens kept so that moses_detokenize
# gives the raw text back (guillemets, „ “, ellipses, O'Neil, 2:1; no escapes), the raw text as
# it is without NORMALIZE (no ’ -> ').
moses_tokenize() {
  local lang=$1 jobs=$2 normalize=$3 aggressive=$4 tok_cmd=(tokenize)
  [ "$aggressive" = 1 ] && tok_cmd+=(-a)
  if [ "$lang" = ru ]; then
    if [ "$normalize" = 1 ]; then sacremoses -l ru -j "$jobs" -q normalize -c; else cat; fi \
      | python -m mgsa_preprocess.moses_ru "${tok_cmd[@]}" -j "$jobs"
  elif [ "$normalize" = 1 ]; then
    sacremoses -l "$lang" -j "$jobs" -q normalize -c "${tok_cmd[@]}"
  else
    sed "s/’/'/g" | sacremoses -l "$lang" -j "$jobs" -q "${tok_cmd[@]}"
  fi
}

# moses_detokenize LANG < tokenized > text: sacremoses' detokenizer; Russian: the one that undoes
# moses_tokenize's Russian tokens (mgsa_preprocess.moses_ru).
moses_detokenize() {
  if [ "$1" = ru ]; then python -m mgsa_preprocess.moses_ru detokenize; else sacremoses -l "$1" -q detokenize; fi
}

# lowercase < in > out: Python's str.lower, the same as select_trees.py --lowercase applies to leaves.
lowercase() {
  python -c 'import sys
for f in sys.stdin, sys.stdout: f.reconfigure(encoding="utf-8")
sys.stdout.writelines(line.lower() for line in sys.stdin)'
}

# compound_split < tokenized > split: the "##AT##-##AT##" splitting of hyphenated compounds
# used for tokenized BLEU since Vaswani et al. (2017) (tensor2tensor's get_ende_bleu.sh,
# fairseq's compound_split_bleu.sh).
compound_split() { sed -E 's/(\S)-(\S)/\1 ##AT##-##AT## \2/g'; }

# split_words VAR ARRAY: split the string in VAR into the array ARRAY (for FAIRSEQ_EXTRA and friends).
split_words() { read -r -a "$2" <<< "${!1:-}"; }

# check_user_dir: USER_DIR (default: where Python finds the fairseq_mgsa package, what
# `mgsa-user-dir` prints, without importing fairseq) must be the fairseq_mgsa package directory.
check_user_dir() {
  if [ -z "${USER_DIR:-}" ]; then
    USER_DIR=$(python -c 'import importlib.util, os; s = importlib.util.find_spec("fairseq_mgsa"); print(os.path.dirname(s.origin) if s else "")')
  fi
  [ -f "${USER_DIR:-}/__init__.py" ] || die "USER_DIR='${USER_DIR:-}' is not the fairseq_mgsa package directory (\`mgsa-user-dir\` prints it; install fairseq-mgsa first)"
}

# The systems: fairseq_mgsa/systems.py (`python -m fairseq_mgsa.systems` lists them). It is
# read as a script from USER_DIR, without importing fairseq (3 s a call otherwise).
# systems_py ARGS...: run the registry's command line, stop with its message on an error.
systems_py() {
  check_user_dir
  python "$USER_DIR/systems.py" "$@" || die "SYSTEM/SYSTEMS: see the message above (python -m fairseq_mgsa.systems lists the systems)"
}

# system_train_args SYSTEM SIZE ARRAY: the fairseq-train options of SYSTEM at SIZE into ARRAY.
system_train_args() {
  local out
  out=$(systems_py args "$1" --size "$2" --lines) || exit 1
  mapfile -t "$3" <<< "$out"
}

# system_field SYSTEM FIELD: one field of SYSTEM (task, label, ...).
system_field() { systems_py get "$1" "$2"; }

# systems_need_trees: yes when a system of SYSTEMS reads phrase files (trees), else no.
systems_need_trees() {
  local names=()
  read -r -a names <<< "$SYSTEMS"
  [ "${#names[@]}" -gt 0 ] || die "SYSTEMS is empty"
  systems_py needs-trees "${names[@]}"
}

# install_split TMP_PREFIX SPLIT: the files test_set_text.py wrote as TMP_PREFIX.{SRC,TGT}[.refN]
# into RAW_DIR as SPLIT.{SRC,TGT}[.refN] (an unchanged file keeps its time: the steps after it are
# not redone for it); RAW_DIR's further references of SPLIT beyond those go.
install_split() {
  local tmp=$1 split=$2 f i=1
  for f in "$SRC" "$TGT"; do replace_if_changed "$tmp.$f" "$RAW_DIR/$split.$f"; done
  while [ -f "$tmp.$TGT.ref$i" ]; do replace_if_changed "$tmp.$TGT.ref$i" "$RAW_DIR/$split.$TGT.ref$i"; i=$((i + 1)); done
  while [ -f "$RAW_DIR/$split.$TGT.ref$i" ]; do rm -f "$RAW_DIR/$split.$TGT.ref$i"; i=$((i + 1)); done
}

# test_set_to_raw SPLIT SRC_FILE REF_FILE...: a test set's SGML/XML source and references
# (examples/common/test_set_text.py) into RAW_DIR/SPLIT.{SRC,TGT} and SPLIT.TGT.ref1 ... (install_split).
test_set_to_raw() {
  local split=$1 src=$2 tmp=$WORKDIR/orig/text/$1
  shift 2
  mkdir -p "$WORKDIR/orig/text" "$RAW_DIR"
  rm -f "$tmp".*
  python "$COMMON_DIR/test_set_text.py" --src "$src" --refs "$@" --out "$tmp" --src-lang "$SRC" --tgt-lang "$TGT" || exit 1
  install_split "$tmp" "$split"
}
