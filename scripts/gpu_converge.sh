#!/usr/bin/env bash
# A CPU-sized recipe's table trained to convergence on one borrowed GPU, in one command that may be
# cut: the recipe's GPU preset (multi30k_en_de or tatoeba_zh_en: size `iwslt`, fp16, stopped on
# validation by its patience rule), every run of the table at once on the one GPU (a step of this
# size is bound by fairseq's host work, so runs sharing the GPU finish sooner together), each run's
# record packed into OUT as the run finishes, so that a command cut at any point keeps what
# finished. Everything that needs no GPU (the corpus, the parser and its trees, BPE, binaries) is
# made beforehand on the CPU by the recipe's steps 01-05 and carried.
#
#   bash scripts/gpu_converge.sh prepare RECIPE WORKDIR [DEST]
#       copy what steps 06-08 read from a recipe WORKDIR whose step 05 is done (data-bin/, and the
#       test sets' raw/test.* and tok/test.*) into DEST (default lease/RECIPE, ignored by git):
#       about 8 MB for either recipe; the training text is only in the binaries
#   bash scripts/gpu_converge.sh run RECIPE PREPARED OUT [--runs "SYSTEM:SEED ..."] [--jobs N] [--limit S]
#       steps 06-08 of each run (default: the recipe's converged table, below) with PRESET=gpu
#       unless the environment sets PRESET, N runs at a time (default all), every run killed
#       when S seconds (default 540) have passed since the start; writes
#         OUT/summary.txt   one line a run: finished (its BLEU and where it stopped), failed, or cut
#         OUT/runs.tgz      runs/RUN/: train.log, stopping.txt, and for a finished run bleu.txt,
#                           hyp.detok, generate-test.log; run.log (the steps' output) for every run
#         OUT/converge.log  this script's progress
#       Exit status 0 when every run finished, 3 when the limit cut some, 1 when one failed.
#
# Every recipe setting can still be set by environment (PATIENCE=10 MAX_UPDATE=20000 ...; on the
# CPU, a rehearsal: PRESET=cpu MAX_UPDATE=20 VALID_INTERVAL=10 PATIENCE=2). The default tables:
# multi30k_en_de: the Transformer and syntactic MG-SA seeds 1-3, MG-SA n-gram, HySAN and PBA
# interleaved QUERYK seed 1 (9 runs); tatoeba_zh_en: the Transformer, syntactic and n-gram MG-SA
# and HySAN, seeds 1-3 (12 runs). docs/gpu.md has the lease's command.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "gpu_converge.sh: error: $*" >&2; exit 2; }
usage() { sed -n '2,/^[^#]/{/^#/!d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

recipe_dir() {
  case $1 in
    multi30k_en_de | tatoeba_zh_en) echo "$ROOT/examples/$1" ;;
    *) die "RECIPE '$1': expected multi30k_en_de or tatoeba_zh_en" ;;
  esac
}

default_runs() {
  local s
  case $1 in
    multi30k_en_de)
      for s in 1 2 3; do printf 'transformer:%s mgsa_syntactic:%s ' "$s" "$s"; done
      echo "mgsa_ngram:1 hysan:1 pba_interleaved_queryk:1" ;;
    tatoeba_zh_en)
      for s in 1 2 3; do printf 'transformer:%s mgsa_syntactic:%s mgsa_ngram:%s hysan:%s ' "$s" "$s" "$s" "$s"; done
      echo ;;
  esac
}

# check_prepared DIR: what steps 06-08 read, before any run starts
check_prepared() {
  local dir=$1 f
  [ -d "$dir/data-bin" ] || die "$dir/data-bin: no such directory (the recipe's step 05 output; 'prepare' copies it)"
  ls "$dir"/data-bin/dict.*.txt > /dev/null 2>&1 || die "$dir/data-bin has no dict.*.txt: not a binarized data directory"
  for f in "$dir"/data-bin/test.*.idx; do
    [ -e "$f" ] || die "$dir/data-bin has no test split (test.*.idx): steps 07-08 decode and score it"
  done
  ls "$dir"/raw/test.* > /dev/null 2>&1 || die "$dir/raw/test.*: missing (the test references step 08 scores against)"
  ls "$dir"/tok/test.* > /dev/null 2>&1 || die "$dir/tok/test.*: missing (step 07 counts the test sentences in it)"
}

prepare() {
  [ $# -ge 2 ] && [ $# -le 3 ] || die "prepare RECIPE WORKDIR [DEST]"
  recipe_dir "$1" > /dev/null
  local work=$2 dest=${3:-$ROOT/lease/$1}
  check_prepared "$work"
  [ ! -e "$dest" ] || die "$dest exists: remove it or name another DEST"
  # without set -e: a copy that fails (a full disk) must stop here, not leave a lease that looks whole
  { mkdir -p "$dest/raw" "$dest/tok" && cp -r "$work/data-bin" "$dest/" && cp "$work"/raw/test.* "$dest/raw/" \
      && cp "$work"/tok/test.* "$dest/tok/"; } || { echo "gpu_converge.sh: error: copying into $dest failed" >&2; exit 1; }
  echo "prepared $dest from $work: $(du -sh "$dest" | cut -f1)"
}

# pack: OUT/runs.tgz from the collected runs, replaced whole (a cut leaves the last complete one)
pack() {
  tar czf "$OUT/runs.tgz.partial" -C "$COLLECT" runs && mv "$OUT/runs.tgz.partial" "$OUT/runs.tgz"
}

# collect RUN STATUS: the run's record into COLLECT/runs/RUN and one line into OUT/summary.txt
collect() {
  local run=$1 status=$2 dest=$COLLECT/runs/$1 res=$WORK/results/$1 ckpt=$WORK/checkpoints/$1 stop bleu=""
  mkdir -p "$dest"
  cp "$WORK/logs/$run.log" "$dest/run.log" 2> /dev/null
  cp "$ckpt/train.log" "$dest/" 2> /dev/null
  if [ "$status" = finished ]; then
    cp "$res/bleu.txt" "$res/stopping.txt" "$res/generate-test.log" "$dest/" 2> /dev/null
    cp "$res/hyp.detok" "$dest/" 2> /dev/null || cp "$res/hyp.tok" "$dest/" 2> /dev/null
    # the detokenized sacreBLEU and chrF lines of step 08 (either recipe's wording): their figures
    bleu=$(grep -E -m 2 "^(detokenized sacreBLEU|chrF)" "$dest/bleu.txt" 2> /dev/null \
      | sed -E 's/^(detokenized sacreBLEU|chrF)[^:]*: *([0-9.]+).*/\1 \2/' | paste -sd, | sed 's/,/, /')
  elif [ -f "$dest/train.log" ]; then
    PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" python -m fairseq_mgsa.analysis.compare.stopping summary \
      "$dest/train.log" > "$dest/stopping.txt" 2> /dev/null
  fi
  stop=$(cut -d: -f2- "$dest/stopping.txt" 2> /dev/null | head -n 1)
  echo "$run: $status${bleu:+; $bleu};${stop:- no training log}" >> "$OUT/summary.txt"
  pack
}

run_all() {
  [ $# -ge 3 ] || die "run RECIPE PREPARED OUT [--runs \"SYSTEM:SEED ...\"] [--jobs N] [--limit S]"
  local recipe=$1 prepared runs jobs limit
  RECIPE_DIR=$(recipe_dir "$1")
  prepared=$(cd "$2" 2> /dev/null && pwd) || die "PREPARED $2: no such directory"
  OUT=$3
  shift 3
  runs=$(default_runs "$recipe"); jobs=""; limit=540
  while [ $# -gt 0 ]; do
    case $1 in
      --runs) runs=$2; shift 2 ;;
      --jobs) jobs=$2; shift 2 ;;
      --limit) limit=$2; shift 2 ;;
      *) die "unknown option '$1'" ;;
    esac
  done
  [[ $limit =~ ^[0-9]+$ ]] || die "--limit '$limit': expected seconds"
  local r names=()
  for r in $runs; do
    [[ $r =~ ^[a-z0-9_]+:[0-9]+$ ]] || die "--runs: '$r' is not SYSTEM:SEED"
    names+=("${r%%:*}_seed${r##*:}")
  done
  [ "${#names[@]}" -gt 0 ] || die "--runs: no run"
  jobs=${jobs:-${#names[@]}}
  [[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs '$jobs': expected a positive number"
  check_prepared "$prepared"
  for r in fairseq-train fairseq-generate sacrebleu sacremoses; do
    command -v "$r" > /dev/null || die "'$r' not on PATH (with pip install --target DIR: PATH=DIR/bin:\$PATH)"
  done
  mkdir -p "$OUT" || die "OUT $OUT: cannot create it"
  [ ! -e "$OUT/summary.txt" ] || die "$OUT holds an earlier run's summary.txt: name another OUT"

  local deadline=$(( $(date +%s) + limit ))
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_converge.XXXXXX")
  COLLECT=$WORK/collect
  mkdir -p "$WORK/logs" "$COLLECT/runs"
  ln -s "$prepared/data-bin" "$WORK/data-bin"
  cp -r "$prepared/raw" "$prepared/tok" "$WORK/"
  export WORKDIR=$WORK PRESET=${PRESET:-gpu} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
  export OUT WORK COLLECT
  : > "$OUT/summary.txt"
  echo "$(date -u +%T) ${#names[@]} runs of $recipe ($PRESET preset), $jobs at a time, killed after $limit s; work in $WORK" \
    | tee -a "$OUT/converge.log"

  local i=0 name left failed=0 cut=0
  for r in $runs; do
    name=${names[$i]}; i=$((i + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    left=$(( deadline - $(date +%s) ))
    if [ "$left" -le 0 ]; then
      echo "$name: not started (the limit had passed)" >> "$OUT/summary.txt"; cut=1; continue
    fi
    # timeout signals its whole process group: the steps and fairseq under them stop too; the
    # steps' paths are the inner shell's arguments, not expanded here
    # shellcheck disable=SC2016
    ( cd "$WORK" && SYSTEM=${r%%:*} SEED=${r##*:} RUN_NAME=$name timeout -k 15 "$left" bash -c \
        'bash "$1/06_train.sh" && bash "$1/07_generate.sh" && bash "$1/08_score.sh"' _ "$RECIPE_DIR" \
        > "$WORK/logs/$name.log" 2>&1
      rc=$?
      case $rc in 0) s=finished ;; 124 | 137) s="cut by the limit of $limit s" ;; *) s="failed (exit $rc; run.log)" ;; esac
      # one collector at a time: runs finishing together must not interleave their packs
      flock "$WORK/collect.lock" bash -c "$(declare -f collect pack); ROOT='$ROOT'; collect '$name' '$s'"
      echo "$(date -u +%T) $name: $s" >> "$OUT/converge.log"
      echo "$rc" > "$WORK/logs/$name.rc" ) &
    echo "$(date -u +%T) $name: started (${left} s left)" >> "$OUT/converge.log"
  done
  wait
  for name in "${names[@]}"; do
    [ -f "$WORK/logs/$name.rc" ] || continue
    case $(cat "$WORK/logs/$name.rc") in 0) ;; 124 | 137) cut=1 ;; *) failed=1 ;; esac
  done
  echo "$(date -u +%T) done" >> "$OUT/converge.log"
  cat "$OUT/summary.txt"
  [ "$failed" = 0 ] || exit 1
  [ "$cut" = 0 ] || exit 3
}

case ${1:-} in
  prepare) shift; prepare "$@" ;;
  run) shift; run_all "$@" ;;
  -h | --help) usage ;;
  *) usage >&2; exit 2 ;;
esac
