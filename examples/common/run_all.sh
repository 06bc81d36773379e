# run_all.sh's body, shared by the recipes (sourced by each recipe's run_all.sh after its
# defaults.sh): the data steps, then training, decoding and scoring for every system and seed,
# then the comparison. Every step skips what is done, so rerunning resumes.
# shellcheck shell=bash

# recipe_step DIR SCRIPT...: run each numbered SCRIPT of the recipe in DIR unless its number is
# below FROM_STEP; stop at the first that fails, with its status. Tested explicitly: run_one
# calls this on the left of ||, where bash ignores set -e (a failed training would otherwise
# be followed by decoding a stale checkpoint).
recipe_step() {
  local dir=$1 script
  shift
  for script in "$@"; do
    if [ "$((10#${script:0:2}))" -ge "$FROM_STEP" ]; then bash "$dir/$script" || return; fi
  done
}

# run_one RUN SYSTEM SEED DIR SCRIPT...: steps 06-08 of one run; with RUN_JOBS > 1 in the
# background, its output in WORKDIR/logs/RUN.log and, when it fails, WORKDIR/logs/RUN.failed.
run_one() {
  local run=$1 system=$2 seed=$3 dir=$4
  shift 4
  # an earlier invocation's mark (RUN_JOBS > 1) must not count: the outcome is this run's
  rm -f "$WORKDIR/logs/$run.failed"
  if [ "${RUN_JOBS:-1}" -le 1 ]; then
    SYSTEM=$system SEED=$seed RUN_NAME=$run recipe_step "$dir" "$@"
    return
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$RUN_JOBS" ]; do wait -n || true; done
  mkdir -p "$WORKDIR/logs"
  log "run $run: started, $RUN_JOBS at a time (log: $WORKDIR/logs/$run.log)"
  # appended: a rerun (which resumes the run) keeps the earlier attempts' lines
  ( SYSTEM=$system SEED=$seed RUN_NAME=$run recipe_step "$dir" "$@" >> "$WORKDIR/logs/$run.log" 2>&1 \
      || touch "$WORKDIR/logs/$run.failed" ) &
}

# refuse_step_settings: stop, in one line, when the environment sets a variable that the step
# scripts read but run_all.sh sets for each run itself (it would be ignored), naming what to set.
refuse_step_settings() {
  local problems=() value
  value=$(printenv SYSTEM || true)
  [ -z "$value" ] || problems+=("SYSTEM='$value' picks the system of one step script; run_all.sh trains every system of SYSTEMS: set SYSTEMS='$value'")
  value=$(printenv SEED || true)
  [ -z "$value" ] || problems+=("SEED='$value' is the seed of one step script; run_all.sh trains with each seed of SEEDS: set SEEDS='$value'")
  value=$(printenv RUN_NAME || true)
  [ -z "$value" ] || problems+=("RUN_NAME='$value' names one step script's run; run_all.sh names its runs SYSTEM, RUN_SUFFIX, _seedN: set RUN_SUFFIX")
  value=$(printenv CKPT_DIR || true)
  [ -z "$value" ] || problems+=("CKPT_DIR='$value' is one step script's checkpoint folder; run_all.sh gives each run WORKDIR/checkpoints/RUN: leave it unset")
  value=$(printenv SHARD_ID || true)
  [ -z "$value" ] || problems+=("SHARD_ID='$value' makes 03_parse.sh parse one shard and stop: run 03_parse.sh alone with it")
  [ "${#problems[@]}" = 0 ] && return 0
  local line
  line=$(printf '%s; ' "${problems[@]}")
  die "${line%; }"
}

# run_recipe DIR: the recipe in DIR: steps 01-05 (the data), 06-08 for every system of SYSTEMS
# and each of its seeds (seeds_of; RUN_JOBS runs at a time), the BLEU files, then step 09 (the table).
run_recipe() {
  local dir=$1 system seed run script set data=() per_run=() failed=()
  refuse_step_settings
  # MULTI_SEED_SYSTEMS is exported only when the environment gave it (check_settings.py tells
  # a given list, which must name systems of SYSTEMS, from the recipe's default)
  export WORKDIR SRC TGT SYSTEMS SEEDS RUN_SUFFIX
  for script in "$dir"/0[1-9]_*.sh; do
    script=$(basename "$script")
    case "${script:0:2}" in 0[1-5]) data+=("$script") ;; 0[6-8]) per_run+=("$script") ;; esac
  done
  # what the steps import, checked before hours of work (compare-mt is only needed at the end)
  check_user_dir
  python "$USER_DIR/preflight.py" "$(basename "$dir")" sacremoses subword_nmt stanza sacrebleu compare plots \
    || exit 1
  recipe_step "$dir" "${data[@]}"
  for system in $SYSTEMS; do
    for seed in $(seeds_of "$system"); do
      run_one "$(run_name "$system" "$seed")" "$system" "$seed" "$dir" "${per_run[@]}"
    done
  done
  wait
  echo "== $WORKDIR/results"
  for system in $SYSTEMS; do
    for seed in $(seeds_of "$system"); do
      run=$(run_name "$system" "$seed")
      # a failed run's bleu.txt, if any, is an earlier session's: not shown
      if [ -f "$WORKDIR/logs/$run.failed" ]; then
        failed+=("$run")
      else
        for set in "${TEST_NAMES[@]}"; do
          [ ! -f "$(result_dir "$run" "$set")/bleu.txt" ] || cat "$(result_dir "$run" "$set")/bleu.txt"
        done
      fi
    done
  done
  [ "${#failed[@]}" = 0 ] || die "runs failed: ${failed[*]} (see $WORKDIR/logs/RUN.log; rerun to resume them)"
  recipe_step "$dir" 09_compare.sh   # the table: every system against the baseline (results/compare${RUN_SUFFIX}/)
}
