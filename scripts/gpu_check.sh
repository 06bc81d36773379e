#!/usr/bin/env bash
# The GPU check (`make gpu-check`): does the plugin train and decode on this machine's GPU in
# half precision, and at what speed? In at most 9 minutes on one H100-class GPU. The checks are
# tests (tests/gpu/check/, marker gpu) that this script runs phase by phase; the speed phases run
# the training benchmark (python -m benchmarks.bench_training):
#
#   env         versions, the GPU                                   (tests/gpu/check/test_env.py)
#   data        a corpus from the project's grammar with gold trees, binarized with its phrase files
#                                                                   (tests/gpu/check/test_data.py)
#   fp16        every registered system at base size: fairseq-train --fp16 (64 updates), then
#               fairseq-generate --fp16 of the test split          (done within the first 3 minutes;
#                                                                   tests/gpu/check/test_training.py)
#   variants    syntactic MG-SA with --bf16, with --memory-efficient-fp16, and at big size with --fp16
#               (60 updates each)                                   (test_training.py)
#   invariants  every system on the GPU in float16 and bfloat16: incremental decoding with beam
#               reorders = the full forward, a sentence's scores the same however it is padded, and
#               one training step's gradients against the same step in float32  (test_invariants.py)
#   bench       python -m benchmarks.bench_training --fp16 at base size, five systems: speed, FLOP,
#               overhead and memory ratios
#   bench_big   the same where users train: big size, bf16 autocast, 16k-token batches of WMT-length
#               lines, three systems; with each system's share of the GPU's arithmetic rate
#   summary     a table per phase, the summary table last          (tests/gpu/check/summary.py)
#
# Robust to being cut: the phases run one after another, each under its own hard time limit
# (timeout), and everything a phase measures goes to OUT/results.jsonl (one JSON line a run,
# written as the run ends) and OUT/logs/ as it happens: a check stopped at any point keeps what
# it measured, and `python -m tests.gpu.check.summary --out OUT` reports it. The whole
# check takes at most the sum of the limits of the phases it runs (printed at the start).
# Exit status: 0 when every phase ran and passed.
#
#   bash scripts/gpu_check.sh [--out DIR] [--workers N] [--dry-run] [--phases LIST] [--limit PHASE=S]... [--plan]
#
#   --out DIR        output directory (default gpu-check/); must not hold an earlier check's results
#   --workers N      training processes sharing the GPU in the fp16 and variants phases (default 4,
#                    the variants phase has 3 runs): a base-size step on a small batch leaves the GPU
#                    idle while Python prepares the next
#   --dry-run        the CPU rehearsal (MGSA_GPU_TESTS_ON_CPU=1) at the tiny dimensions with a small
#                    corpus: the same phases and outputs in a few minutes (tests/end_to_end/test_gpu_check.py
#                    runs it in CI); fp16 runs as fp16 (fairseq's CPU path), bf16 as bf16
#                    (fairseq_mgsa/bf16.py), one process; refused on a machine with CUDA
#   --phases LIST    only these phases, comma-separated (env and data are always run)
#   --limit PHASE=S  another time limit for a phase, in seconds (a slower GPU); the check's
#                    total follows: it is the sum of the limits
#   --plan           print the phases with their limits and the total, and the time each phase
#                    is expected to take on an H100 or H200, and do nothing else
#
# PYTHON (default python3) runs everything; the project, fairseq and pytest must import in it
# (docs/gpu.md: installing on a machine without network).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-python3}

usage() { sed -n '/^#   bash scripts/,/^# (docs/p' "$0" | sed 's/^# \{0,1\}//'; }
# the tests of a phase (tests/gpu/check/), their output to the phase's log: fairseq's logging as
# it happens (-s, no log capture)
CHECK_TESTS=("$PY" -m pytest -m gpu -p no:cacheprovider -p no:logging -s -q -rfEs)

# the training workers of a phase (the script calls itself under the phase's time limit):
# each restarted while it exits 3 (a CUDA error spoilt its process) for the runs left
if [ "${1:-}" = "--worker-group" ]; then
  phase=$2 rc=0 pids=()
  for ((i = 0; i < WORKERS; i++)); do
    (
      while :; do
        MGSA_GPU_CHECK_WORKER="$i/$WORKERS" "${CHECK_TESTS[@]}" "tests/gpu/check/test_training.py::test_$phase" \
          >> "$OUT/logs/$phase.worker$i.log" 2>&1
        r=$?
        [ "$r" -eq 5 ] && exit 0  # pytest collected nothing: no run is this worker's
        [ "$r" -eq 3 ] || exit "$r"
        echo "[gpu-check] $phase worker $i: device error, restarting it for the runs left" >&2
      done
    ) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
  exit "$rc"
fi

PHASES=(env data fp16 variants invariants bench bench_big)
OUT=gpu-check WORKERS=4 DRY=0 PLAN=0 ONLY=$(IFS=,; echo "${PHASES[*]}") LIMITS=()
die() { echo "gpu_check.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=${2:?--out needs a directory}; shift ;;
    --workers) WORKERS=${2:?--workers needs a number}; shift ;;
    --dry-run) DRY=1 ;;
    --phases) ONLY=${2:?--phases needs a list}; shift ;;
    --limit) LIMITS+=("${2:?--limit needs PHASE=SECONDS}"); shift ;;
    --plan) PLAN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
  shift
done
[[ $WORKERS =~ ^[1-9][0-9]*$ ]] || die "--workers: expected a positive integer, got '$WORKERS'"
for p in ${ONLY//,/ }; do
  [[ " ${PHASES[*]} " == *" $p "* ]] || die "--phases: unknown phase '$p' (phases: ${PHASES[*]})"
done
for l in "${LIMITS[@]}"; do
  [[ $l =~ ^([a-z0-9_]+)=([1-9][0-9]*)$ && " ${PHASES[*]} " == *" ${BASH_REMATCH[1]} "* ]] \
    || die "--limit: expected PHASE=SECONDS with a phase of ${PHASES[*]}, got '$l'"
done

# Time limits in seconds, one a phase; the check takes at most their sum (each phase is killed
# at its limit; --limit raises a phase's limit and with it the total). GPU: each phase's work
# sized so that its expected time (EXPECT: each phase's time in the H200 run of 2026-11-28 in
# docs/gpu.md; variants scaled from its 40 updates there to 60, bench_big never measured;
# process starts, model builds and Triton compilations included) is within 75% of its limit;
# env + data + fp16 end within the first 3 minutes, the whole check within 9 (538 s of limits,
# about 396 s expected).
if [ "$DRY" = 1 ]; then
  WORKERS=1
  declare -A LIMIT=([env]=60 [data]=90 [fp16]=240 [variants]=90 [invariants]=90 [bench]=150 [bench_big]=150)
  BENCH=(--arch-size tiny --updates 2 --warmup 1 --max-tokens 512 --systems "transformer,mgsa_syntactic" --threads 1)
  BENCH_BIG=(--arch-size tiny --updates 2 --warmup 1 --own-updates 1 --max-tokens 1024 --train-sentences 400
             --systems "transformer,mgsa_syntactic" --threads 1)
else
  declare -A LIMIT=([env]=14 [data]=16 [fp16]=131 [variants]=72 [invariants]=102 [bench]=116 [bench_big]=87)
  declare -A EXPECT=([env]=8 [data]=10 [fp16]=98 [variants]=52 [invariants]=76 [bench]=87 [bench_big]=65)
  # the base-size benchmark of five systems (the Transformer, both MG-SA kinds, HySAN, one PBA:
  # a system costs some 11 s of builds, compilations and counts on top of its updates), few
  # own-run updates (throughput and memory), 16 interleaved ones (the ratios); every system:
  # bench_training.py alone (docs/gpu.md)
  # every batch warmed first, then rounds over the 16 timed batches until each speed ratio's 95%
  # interval is within +-3% of it (at most 8 rounds: 128 paired updates a system)
  BENCH=(--arch-size base --updates 16 --warmup 3 --own-updates 3 --max-tokens 4096 --rounds 8 --ci-target 0.03
         --systems "transformer,mgsa_ngram,mgsa_syntactic,hysan,pba_heterogeneous_convkv")
  # three systems: the Transformer, syntactic MG-SA and HySAN
  BENCH_BIG=(--arch-size big --updates 6 --warmup 2 --own-updates 1 --max-tokens 16384
             --systems "transformer,mgsa_syntactic,hysan")
fi
for l in "${LIMITS[@]}"; do LIMIT[${l%%=*}]=${l#*=}; done
RUN=() TOTAL=0 EXPECTED=() EXPECTED_TOTAL=0
for p in "${PHASES[@]}"; do
  [[ ",env,data,$ONLY," == *",$p,"* ]] || continue
  RUN+=("$p ${LIMIT[$p]} s"); TOTAL=$((TOTAL + LIMIT[$p]))
  if [ "$DRY" = 0 ]; then
    EXPECTED+=("$p ${EXPECT[$p]} s (75% of its limit: $((LIMIT[$p] * 3 / 4)) s)")
    EXPECTED_TOTAL=$((EXPECTED_TOTAL + EXPECT[$p]))
  fi
done
# "a, b, c": the items joined for one line of the plan
join_items() { local out; out=$(printf '%s, ' "$@"); echo "${out%, }"; }
PLAN_LINE="[gpu-check] phases and time limits: $(join_items "${RUN[@]}"); at most $TOTAL s in all"
if [ "$PLAN" = 1 ]; then
  echo "$PLAN_LINE"
  [ "$DRY" = 0 ] && echo "[gpu-check] expected on an H100 or H200 (measured on an H200, docs/gpu.md; variants" \
    "scaled to its 60 updates, bench_big not yet measured): $(join_items "${EXPECTED[@]}");" \
    "about $EXPECTED_TOTAL s in all"
  exit 0
fi

if [ -e "$OUT/results.jsonl" ]; then
  echo "gpu_check.sh: $OUT holds the results of an earlier check ($OUT/results.jsonl): give another --out or remove it" >&2
  exit 2
fi
mkdir -p "$OUT/logs" || exit 1
OUT=$(cd "$OUT" && pwd)
export OUT PY DRY MGSA_GPU_CHECK_OUT=$OUT
# the rehearsal on the CPU (tests/gpu/conftest.py); a machine with CUDA refuses it
if [ "$DRY" = 1 ]; then export MGSA_GPU_TESTS_ON_CPU=1; else unset MGSA_GPU_TESTS_ON_CPU; fi
echo "$PLAN_LINE"

start=$(date +%s)
results=$OUT/results.jsonl
phase() {  # NAME COMMAND...: runs COMMAND under the phase's limit, logs to OUT/logs/NAME.log, records it
  local name=$1; shift
  [[ ",env,data,$ONLY," == *",$name,"* ]] || return 0
  local limit=${LIMIT[$name]} t0 rc cut=false
  t0=$(date +%s)
  echo "[gpu-check] $name (limit ${limit} s; $(( $(date +%s) - start )) s so far) -> $OUT/logs/$name.log"
  timeout -k 10 "$limit" "$@" >> "$OUT/logs/$name.log" 2>&1
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then cut=true; fi
  local seconds=$(( $(date +%s) - t0 ))
  printf '{"time": %s, "kind": "phase", "phase": "%s", "rc": %d, "seconds": %d, "limit_s": %d, "cut": %s}\n' \
    "$(date +%s)" "$name" "$rc" "$seconds" "$limit" "$cut" >> "$results"
  echo "[gpu-check] $name: exit $rc in $seconds s$([ "$cut" = true ] && echo ', CUT by its time limit')"
  return "$rc"
}

DEVICE=cuda; [ "$DRY" = 1 ] && DEVICE=cpu
phase env "${CHECK_TESTS[@]}" tests/gpu/check/test_env.py || {
  tail -n 5 "$OUT/logs/env.log"; echo "[gpu-check] the environment is not ready: stopping"; exit 1; }
phase data "${CHECK_TESTS[@]}" tests/gpu/check/test_data.py || {
  tail -n 15 "$OUT/logs/data.log"; echo "[gpu-check] no corpus: stopping"; exit 1; }
phase fp16 env WORKERS="$WORKERS" bash "$0" --worker-group fp16
phase variants env WORKERS=$((WORKERS < 3 ? WORKERS : 3)) bash "$0" --worker-group variants
phase invariants "${CHECK_TESTS[@]}" tests/gpu/check/test_invariants.py
phase bench "$PY" -m benchmarks.bench_training --fp16 --data "$OUT/data-bin" --no-decode --history '' \
  --out "$OUT/training_${DEVICE}_$([ "$DRY" = 1 ] && echo tiny || echo base).json" "${BENCH[@]}"
phase bench_big "$PY" -m benchmarks.bench_training --bf16 --sentences-per-line 2 --no-decode --history '' \
  --decode-sentences 8 --out "$OUT/bench_big_${DEVICE}_$([ "$DRY" = 1 ] && echo tiny || echo big).json" "${BENCH_BIG[@]}"
echo "[gpu-check] $(( $(date +%s) - start )) s in all"
echo
"$PY" -m tests.gpu.check.summary --out "$OUT" | tee "$OUT/summary.txt"
exit "${PIPESTATUS[0]}"
