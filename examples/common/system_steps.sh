# The runs of the systems shared by the recipes (examples/wmt14_en_de, examples/iwslt14_de_en,
# examples/multi30k_en_de): 06 training, 07 averaging and translating, 08 scoring, 09 comparing
# the systems; they read the binaries the data steps (data_steps.sh) wrote into DATA_BIN.
# Sourced through preamble.sh, after the variables are set (the recipe's defaults.sh, then
# preamble.sh's) and lib.sh; each step_* function reads them. Training leaves a marker in
# $WORKDIR/.done (run_train); decoding and scoring are skipped while their outputs are newer than
# what they read; so a rerun resumes where it stopped (step 09, quick, is always redone).
#
# Files, under WORKDIR:
#   checkpoints/{RUN_NAME}/    training; results/{RUN_NAME}/: translations and BLEU
#   results/compare{RUN_SUFFIX}/   step 09's table, JSON, plots and compare-mt's report
# shellcheck shell=bash

# cpu_threads: with GPUS=0, fairseq on the CPU (--cpu, data loading in the main process) with
# THREADS threads when that is set (one a run: runs side by side then do not fight over cores).
cpu_threads() {
  [ "${GPUS:-0}" = 0 ] || return 0
  FAIRSEQ_EXTRA="--cpu --num-workers 0 ${FAIRSEQ_EXTRA:-}"
  GEN_EXTRA="--cpu --num-workers 0 ${GEN_EXTRA:-}"
  if [ -n "${THREADS:-}" ]; then export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS; fi
}

# one_gpu: GPUS, unless given: one when the job may use a GPU, else 0 (the CPU).
one_gpu() { GPUS=${GPUS:-$(( $(num_gpus) > 0 ? 1 : 0 ))}; }

# every_gpu: GPUS, unless given: every GPU the job may use (num_gpus), 0 without one.
every_gpu() { GPUS=${GPUS:-$(num_gpus)}; }

# paper_batch: every_gpu, and UPDATE_FREQ (unless given) ceil(PAPER_GPUS / GPUS), so that a
# batch is PAPER_GPUS x MAX_TOKENS tokens on however many GPUs (the CPU counting as one).
paper_batch() {
  every_gpu
  UPDATE_FREQ=${UPDATE_FREQ:-$(( (PAPER_GPUS + (GPUS > 0 ? GPUS : 1) - 1) / (GPUS > 0 ? GPUS : 1) ))}
}

# fp16_flags: --fp16 when FP16=1, or FP16=auto and torch sees a GPU.
fp16_flags() {
  if [ "$FP16" = 1 ] || { [ "$FP16" = auto ] && has_cuda; }; then echo --fp16; fi
}

# data_fingerprint: a checksum of what training reads from DATA_BIN (the dictionaries, and the
# sentence lengths of the training and validation binaries: any other BPE or text changes them).
data_fingerprint() {
  local pair=$SRC-$TGT
  (cd "$DATA_BIN" 2>/dev/null && cksum "dict.$SRC.txt" "dict.$TGT.txt" "train.$pair.$SRC.idx" "train.$pair.$TGT.idx" \
    "valid.$pair.$SRC.idx" "valid.$pair.$TGT.idx" 2>&1) | cksum | cut -d' ' -f1
}

# run_settings: every setting a run's model depends on but MAX_UPDATE and the data, "NAME=value;
# ...": the system (its registry options included), the seed, the optimisation, the batch
# (GPUs x MAX_TOKENS x UPDATE_FREQ), fp16, where it stops (PATIENCE ...) and which checkpoints
# it keeps (what step 07 averages), the other fairseq options. Not here: MAX_UPDATE (raised, the
# run resumes; see step_train) and what only changes speed or logs (THREADS, LOG_INTERVAL).
run_settings() {
  local sys_opts=() half=0 kept
  system_train_args "$SYSTEM" "$ARCH_SIZE" sys_opts
  [ -z "$(fp16_flags)" ] || half=1
  if [ -n "${PATIENCE:-}" ]; then
    kept="PATIENCE=$PATIENCE; VALID_INTERVAL=$VALID_INTERVAL; STOP_METRIC=$STOP_METRIC"
  else
    kept="PATIENCE=; SAVE_INTERVAL_UPDATES=$SAVE_INTERVAL_UPDATES"
  fi
  local vocab=""   # only when set: the runs trained before SEPARATE_VOCAB existed keep their record
  [ "$SEPARATE_VOCAB" = 1 ] && vocab="; SEPARATE_VOCAB=1"
  echo "SYSTEM=$SYSTEM; ARCH_SIZE=$ARCH_SIZE; system options=${sys_opts[*]}; SYSTEM_ARGS=${SYSTEM_ARGS:-}; SEED=$SEED; LR=$LR; DROPOUT=$DROPOUT; WEIGHT_DECAY=$WEIGHT_DECAY; WARMUP=$WARMUP; WARMUP_INIT_LR=$WARMUP_INIT_LR; LABEL_SMOOTHING=$LABEL_SMOOTHING; batch=$(( (${GPUS:-0} > 0 ? GPUS : 1) * MAX_TOKENS * UPDATE_FREQ )) tokens; fp16=$half; $kept; AVG_N=$AVG_N; FAIRSEQ_EXTRA=${FAIRSEQ_EXTRA:-}$vocab"
}

# embedding_options: --share-all-embeddings with one joined dictionary; with SEPARATE_VOCAB=1 (a
# dictionary per side) the decoder's input and output embeddings alone are shared.
embedding_options() {
  if [ "$SEPARATE_VOCAB" = 1 ]; then echo --share-decoder-input-output-embed; else echo --share-all-embeddings; fi
}

# result_dir RUN TEST: where RUN's translations and scores of the test set TEST (of TEST_SETS) go:
# results/RUN for the test set named test (the En-De recipes' one), results/RUN/TEST for any other.
result_dir() { if [ "$2" = test ]; then echo "$WORKDIR/results/$1"; else echo "$WORKDIR/results/$1/$2"; fi; }

# compare_dir TEST: where step 09 writes the table of TEST: results/compare{RUN_SUFFIX}[/TEST], as result_dir.
compare_dir() { if [ "$1" = test ]; then echo "$WORKDIR/results/compare${RUN_SUFFIX:-}"; else echo "$WORKDIR/results/compare${RUN_SUFFIX:-}/$1"; fi; }

# run_train: step 06 (its marker names the run and MAX_UPDATE), done while its data
# (data_fingerprint) and every setting of run_settings are those it was made with; else
# redone, and step_train refuses to resume checkpoints trained on other data or settings.
run_train() {
  RUN_SETTINGS=$(run_settings) || exit 1
  run_step "06_train.$RUN_NAME.$MAX_UPDATE" step_train "data=$(data_fingerprint); $RUN_SETTINGS"
}

# checkpoint_updates FILE: the update count of a fairseq checkpoint; nothing when it cannot be
# read (fairseq-train then says why).
checkpoint_updates() {
  python - "$1" <<'PY' 2>/dev/null || true
import sys
import torch
try:
    state = torch.load(sys.argv[1], map_location="cpu", mmap=True, weights_only=False)
    print(int(state["optimizer_history"][-1]["num_updates"]))
except Exception:
    pass
PY
}

# 06: fairseq-train (settings: see the numbered script), resuming from
# CKPT_DIR/checkpoint_last.pt when there is one (fairseq does that by itself), unless those
# checkpoints were trained on other data (CKPT_DIR/data_fingerprint, see data_fingerprint) or
# with other settings (CKPT_DIR/run_settings, see run_settings), or went past MAX_UPDATE: a
# resumed run must be the run these settings would train from its start.
step_train() {
  need fairseq-train "install fairseq-mgsa (bash scripts/install.sh)"
  check_user_dir
  need_files "$DATA_BIN/dict.$SRC.txt"
  local sys_opts=() sys_extra=() extra=() stop=() fp16_flag out data old updates
  data=$(data_fingerprint)
  RUN_SETTINGS=${RUN_SETTINGS:-$(run_settings)}
  if [ -f "$CKPT_DIR/checkpoint_last.pt" ] && [ -f "$CKPT_DIR/data_fingerprint" ] \
      && [ "$(cat "$CKPT_DIR/data_fingerprint")" != "$data" ]; then
    die "the data in $DATA_BIN changed since the checkpoints in $CKPT_DIR were trained (its dictionary or training text: BPE_MERGES, the corpus or its tokenisation): delete $CKPT_DIR to train $RUN_NAME afresh"
  fi
  # (checkpoints from before the settings were recorded have no run_settings: resumed as before)
  if [ -f "$CKPT_DIR/checkpoint_last.pt" ] && [ -f "$CKPT_DIR/run_settings" ]; then
    old=$(cat "$CKPT_DIR/run_settings")
    [ "$old" = "$RUN_SETTINGS" ] || die "the checkpoints in $CKPT_DIR were trained with other settings ($(settings_change "$old" "$RUN_SETTINGS")): resuming them would not be that run; delete $CKPT_DIR to train $RUN_NAME afresh, or give the new run its own name (run_all.sh: RUN_SUFFIX=...; a step script: RUN_NAME=...)"
  fi
  if [ -f "$CKPT_DIR/checkpoint_last.pt" ]; then
    updates=$(checkpoint_updates "$CKPT_DIR/checkpoint_last.pt")
    if [ -n "$updates" ] && [ "$updates" -gt "$MAX_UPDATE" ]; then
      die "$CKPT_DIR/checkpoint_last.pt is at update $updates, past MAX_UPDATE=$MAX_UPDATE: fairseq would stop at once and step 07 would decode a model of $updates updates; raise MAX_UPDATE, or delete $CKPT_DIR to train $RUN_NAME afresh"
    fi
  fi
  system_train_args "$SYSTEM" "$ARCH_SIZE" sys_opts
  if [ -n "${PATIENCE:-}" ]; then   # stopped on validation, MAX_UPDATE the cap (stopping.py)
    out=$(python -m fairseq_mgsa.analysis.compare.stopping args --patience "$PATIENCE" --valid-interval "$VALID_INTERVAL" \
      --max-update "$MAX_UPDATE" --metric "$STOP_METRIC" --remove-bpe "@@ ") \
      || die "PATIENCE, VALID_INTERVAL, MAX_UPDATE, STOP_METRIC: see the message above"
    mapfile -t stop <<< "$out"
  else
    stop=(--max-update "$MAX_UPDATE" --save-interval-updates "$SAVE_INTERVAL_UPDATES")
  fi
  split_words SYSTEM_ARGS sys_extra
  split_words FAIRSEQ_EXTRA extra
  # GPUS GPUs exactly (fairseq would take every visible one): the batch is GPUS x MAX_TOKENS x UPDATE_FREQ
  [ "${GPUS:-0}" -ge 1 ] && extra=(--distributed-world-size "$GPUS" "${extra[@]}")
  fp16_flag=$(fp16_flags)
  mkdir -p "$CKPT_DIR"
  echo "$data" > "$CKPT_DIR/data_fingerprint"
  echo "$RUN_SETTINGS" > "$CKPT_DIR/run_settings"
  log "training $RUN_NAME: $SYSTEM = ${sys_opts[*]}${sys_extra[*]:+ ${sys_extra[*]}}; ${GPUS:-0} GPUs x max tokens $MAX_TOKENS x update freq $UPDATE_FREQ, lr $LR, dropout $DROPOUT, $MAX_UPDATE updates${PATIENCE:+ at most (stopped after $PATIENCE validations every $VALID_INTERVAL updates without a better $STOP_METRIC)}${fp16_flag:+, fp16} -> $CKPT_DIR"
  # shellcheck disable=SC2086  # $fp16_flag is empty or one word
  fairseq-train "$DATA_BIN" --user-dir "$USER_DIR" "${sys_opts[@]}" "${sys_extra[@]}" \
    --source-lang "$SRC" --target-lang "$TGT" "$(embedding_options)" --dropout "$DROPOUT" \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-9 --clip-norm 0.0 --weight-decay "$WEIGHT_DECAY" \
    --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" --warmup-init-lr "$WARMUP_INIT_LR" \
    --label-smoothing "$LABEL_SMOOTHING" \
    --max-tokens "$MAX_TOKENS" --update-freq "$UPDATE_FREQ" "${stop[@]}" \
    --save-dir "$CKPT_DIR" --keep-interval-updates "$AVG_N" --no-epoch-checkpoints \
    --skip-invalid-size-inputs-valid-test --seed "$SEED" \
    --log-format simple --log-interval "$LOG_INTERVAL" $fp16_flag "${extra[@]}" \
    2>&1 | tee -a "$CKPT_DIR/train.log"
}

# 07: the checkpoint to decode: with DECODE_CHECKPOINT=average the average of the last AVG_N
# checkpoints, with DECODE_CHECKPOINT=best the one with the best validation loss; translate each
# test set of TEST_SETS (beam BEAM, length penalty LENPEN) and keep the hypotheses in test order
# (fairseq-generate's log, with its speed, in generate-test.log), in result_dir RUN TEST. Redone
# only when training went on since (checkpoint_last.pt newer than the checkpoint decoded).
step_average_and_generate() {
  need fairseq-generate "install fairseq-mgsa (bash scripts/install.sh)"
  check_user_dir
  local avg=$CKPT_DIR/checkpoint_avg$AVG_N.pt task i name todo=() out
  local extra=() fp16_flag
  task=$(system_field "$SYSTEM" task) || exit 1
  split_words GEN_EXTRA extra
  need_files "$CKPT_DIR/checkpoint_last.pt"
  for name in "${TEST_NAMES[@]}"; do need_files "$WORKDIR/tok/$name.$TGT"; done
  case "$DECODE_CHECKPOINT" in
    average) ;;
    best) avg=$CKPT_DIR/checkpoint_best.pt; need_files "$avg" ;;
    *) die "DECODE_CHECKPOINT must be average or best (got '$DECODE_CHECKPOINT')" ;;
  esac
  fp16_flag=$(fp16_flags)
  # what the hypotheses depend on besides the checkpoint and the test set (results/RUN/decode_settings)
  local settings="DECODE_CHECKPOINT=$DECODE_CHECKPOINT; AVG_N=$AVG_N; BEAM=$BEAM; LENPEN=$LENPEN; fp16=${fp16_flag:+1}; GEN_EXTRA=${GEN_EXTRA:-}" old
  [ "$DECODE_CHECKPOINT" = average ] || settings=${settings/; AVG_N=$AVG_N/}
  for i in "${!TEST_NAMES[@]}"; do
    name=${TEST_NAMES[$i]}
    out=$(result_dir "$RUN_NAME" "$name")
    old=$(cat "$out/decode_settings" 2>/dev/null || true)
    if [ -f "$out/hyp.tok" ] && [ "$old" != "$settings" ]; then
      log "07: decoding again: $out/hyp.tok was made with $(settings_change "${old:-settings not recorded}" "$settings")"
    elif { [ "$avg" -nt "$CKPT_DIR/checkpoint_last.pt" ] || [ "$DECODE_CHECKPOINT" = best ]; } \
        && [ "$out/hyp.tok" -nt "$CKPT_DIR/checkpoint_last.pt" ] && [ "$out/hyp.tok" -nt "$avg" ] \
        && [ "$out/hyp.tok" -nt "$DATA_BIN/$(test_subset "$i").$SRC-$TGT.$SRC.bin" ]; then
      if [ "$DECODE_CHECKPOINT" = average ]; then
        log "07_average_and_generate: done already ($out/hyp.tok is newer than $avg, itself newer than the last checkpoint)"
      else
        log "07_average_and_generate: done already ($out/hyp.tok is newer than $avg and the last checkpoint)"
      fi
      continue
    fi
    todo+=("$i")
  done
  [ "${#todo[@]}" -gt 0 ] || return 0
  if [ "$DECODE_CHECKPOINT" = average ]; then
    python "$COMMON_DIR/average_checkpoints.py" "$CKPT_DIR" --num "$AVG_N" --output "$avg"
  fi
  for i in "${todo[@]}"; do
    name=${TEST_NAMES[$i]}
    out=$(result_dir "$RUN_NAME" "$name")
    mkdir -p "$out"
    rm -f "$out/decode_settings"
    if [ "$name" = test ]; then log "translating the test set with $avg"; else log "translating the test set $name with $avg"; fi
    # --required-batch-size-multiple 1: fairseq drops a last batch smaller than the
    # multiple (8 by default), which would silently skip test sentences.
    # shellcheck disable=SC2086  # $fp16_flag is empty or one word
    fairseq-generate "$DATA_BIN" --user-dir "$USER_DIR" --task "$task" --source-lang "$SRC" --target-lang "$TGT" \
      --gen-subset "$(test_subset "$i")" --path "$avg" --beam "$BEAM" --lenpen "$LENPEN" --max-tokens "$GEN_MAX_TOKENS" \
      --required-batch-size-multiple 1 --remove-bpe --no-progress-bar $fp16_flag "${extra[@]}" \
      > "$out/generate-test.txt.partial" 2> >(tee "$out/generate-test.log" >&2) \
      || die "fairseq-generate failed: see $out/generate-test.txt.partial"
    mv "$out/generate-test.txt.partial" "$out/generate-test.txt"
    # H-<id>\t<score>\t<tokens>, in the order fairseq finished them: back into test order
    grep '^H-' "$out/generate-test.txt" | cut -c3- | sort -n -k1,1 | cut -f3- > "$out/hyp.tok.partial" || true
    local n_hyp n_ref
    n_hyp=$(lines "$out/hyp.tok.partial"); n_ref=$(lines "$WORKDIR/tok/$name.$TGT")
    [ "$n_hyp" = "$n_ref" ] || die "$out/generate-test.txt has $n_hyp hypotheses for the $n_ref sentences of $WORKDIR/tok/$name.$TGT"
    mv "$out/hyp.tok.partial" "$out/hyp.tok"
    echo "$settings" > "$out/decode_settings"
    log "$n_hyp hypotheses -> $out/hyp.tok"
  done
}

# bleu_line NAME JSON: "NAME: score (details; signature)" from sacrebleu's JSON output.
bleu_line() {
  python - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]}: {r['score']:.2f} ({r['verbose_score']}; {r['signature']})")
PY
}

# 08: for each test set of TEST_SETS, tokenized BLEU (the Moses tokens of hypotheses and
# references; with COMPOUND_SPLIT=1, hyphenated compounds split as Vaswani et al. did; sacrebleu
# --tokenize none) and detokenized sacreBLEU against the raw references, with every reference the
# test set has (RAW_DIR/NAME.TGT and NAME.TGT.ref1 ...).
step_score() {
  need sacrebleu "pip install sacrebleu"
  need sacremoses "pip install sacremoses"
  local name
  for name in "${TEST_NAMES[@]}"; do score_test_set "$name"; done
}

# score_test_set NAME: step 08 for the test set NAME -> result_dir RUN NAME/bleu.txt.
score_test_set() {
  local set=$1 out lc=() name="tokenized BLEU" detok_name="detokenized sacreBLEU" raw_refs=() tok_refs=() ref i
  out=$(result_dir "$RUN_NAME" "$set")
  raw_refs=("$RAW_DIR/$set.$TGT")
  mapfile -t -O 1 raw_refs < <(extra_refs "$set")
  for ref in "${raw_refs[@]}"; do tok_refs+=("$WORKDIR/tok/${ref#"$RAW_DIR"/}"); done
  need_files "$out/hyp.tok" "${tok_refs[@]}" "${raw_refs[@]}"
  # what the scores depend on besides the files (results/RUN/score_settings)
  local settings old newer=1
  settings="LOWERCASE=$LOWERCASE; COMPOUND_SPLIT=$COMPOUND_SPLIT; references=$(marker_paths "${raw_refs[@]}" | paste -sd' ')"
  old=$(cat "$out/score_settings" 2>/dev/null || true)
  for ref in "$out/hyp.tok" "${raw_refs[@]}" "${tok_refs[@]}"; do [ "$out/bleu.txt" -nt "$ref" ] || newer=0; done
  if [ -f "$out/bleu.txt" ] && [ "$old" != "$settings" ]; then
    log "08: scoring again: $out/bleu.txt was made with $(settings_change "${old:-settings not recorded}" "$settings")"
  elif [ "$newer" = 1 ]; then
    log "08_score: done already ($out/bleu.txt is newer than $out/hyp.tok and the references)"
    cat "$out/bleu.txt"
    return 0
  fi
  if [ "$LOWERCASE" = 1 ]; then
    lc=(-lc)
    name="$name (lowercased)"
    detok_name="$detok_name (lowercased)"
  fi
  local bleu_refs=()
  for i in "${!tok_refs[@]}"; do
    bleu_refs[i]=$out/ref.tok.bleu
    [ "$i" = 0 ] || bleu_refs[i]+=".$i"
    if [ "$COMPOUND_SPLIT" = 1 ]; then compound_split < "${tok_refs[i]}" > "${bleu_refs[i]}"; else cp "${tok_refs[i]}" "${bleu_refs[i]}"; fi
  done
  if [ "$COMPOUND_SPLIT" = 1 ]; then
    compound_split < "$out/hyp.tok" > "$out/hyp.tok.bleu"
    name="$name, compounds split"
  else
    cp "$out/hyp.tok" "$out/hyp.tok.bleu"
  fi
  moses_detokenize "$TGT" < "$out/hyp.tok" > "$out/hyp.detok"
  sacrebleu "${bleu_refs[@]}" -i "$out/hyp.tok.bleu" -m bleu --tokenize none -w 2 -f json > "$out/bleu.tok.json"
  sacrebleu "${raw_refs[@]}" -i "$out/hyp.detok" -m bleu "${lc[@]}" -w 2 -f json > "$out/bleu.detok.json"
  local what="test set"
  [ "$set" = test ] || what="test set $set"
  {
    echo "run: $RUN_NAME (system $SYSTEM, seed $SEED), $what: $(lines "$out/hyp.tok") sentences$([ "${#raw_refs[@]}" = 1 ] || echo ", ${#raw_refs[@]} references")"
    bleu_line "$name" "$out/bleu.tok.json"
    bleu_line "$detok_name" "$out/bleu.detok.json"
  } > "$out/bleu.txt.partial"
  mv "$out/bleu.txt.partial" "$out/bleu.txt"
  echo "$settings" > "$out/score_settings"
  cat "$out/bleu.txt"
}

# run_name SYSTEM SEED: a run's name (results/NAME, checkpoints/NAME): SYSTEM, then RUN_SUFFIX
# (e.g. _big), then _seedSEED when SEEDS holds several training seeds or SEED is not 1 (so that
# SEEDS=1 then SEEDS=2 in one WORKDIR are two runs; preamble.sh names a step script's run so too).
run_name() {
  local seeds=()
  read -r -a seeds <<< "${SEEDS:-1}"
  if [ "${#seeds[@]}" -gt 1 ] || [ "$2" != 1 ]; then echo "$1${RUN_SUFFIX:-}_seed$2"; else echo "$1${RUN_SUFFIX:-}"; fi
}

# seeds_of SYSTEM: the training seeds of SYSTEM: all of SEEDS when it is one of
# MULTI_SEED_SYSTEMS (by default every system), else the first seed of SEEDS only.
seeds_of() {
  local seeds=()
  read -r -a seeds <<< "${SEEDS:-1}"
  if in_list "$1" "${MULTI_SEED_SYSTEMS-$SYSTEMS}"; then echo "${seeds[*]}"; else echo "${seeds[0]}"; fi
}

# 09: mgsa-compare (fairseq_mgsa/analysis/compare/) of every system of SYSTEMS, each of its
# seeds (seeds_of), against BASELINE (default transformer when it is in SYSTEMS, else the first; another
# BASELINE naming no system of SYSTEMS stops with mgsa-compare's one-line error), on the
# detokenized hypotheses and every raw reference (lowercased with LOWERCASE=1), for each test set
# of TEST_SETS into compare_dir TEST: the table (also printed), JSON, plots and compare-mt's
# report; with several test sets, then one table of them all (test_sets_table.py: the papers'
# layout, a column per test set and their average) in results/compare{RUN_SUFFIX}/test_sets.md.
step_compare() {
  local names=() args=() lc=() name seed_n dir dirs baseline set refs=() ref out outs=()
  read -r -a names <<< "$SYSTEMS"
  if [ "${#names[@]}" -lt 2 ]; then
    log "09_compare: one system ($SYSTEMS): nothing to compare it with"
    return 0
  fi
  baseline=${BASELINE:-transformer}
  # the default baseline absent from SYSTEMS: the first system, said; any other BASELINE goes to
  # mgsa-compare as given (a misspelled one is its one-line error listing the systems)
  if [ "$baseline" = transformer ] && [[ " ${names[*]} " != *" transformer "* ]]; then
    baseline=${names[0]}
    log "BASELINE transformer is not among SYSTEMS (${names[*]}): the baseline is $baseline"
  fi
  [ "$LOWERCASE" = 1 ] && lc=(--lowercase)
  for set in "${TEST_NAMES[@]}"; do
    need_files "$RAW_DIR/$set.$TGT"
    refs=(--ref "$RAW_DIR/$set.$TGT")
    for ref in $(extra_refs "$set"); do refs+=(--ref "$ref"); done
    args=()
    for name in "${names[@]}"; do
      dirs=""
      for seed_n in $(seeds_of "$name"); do
        dir=$(result_dir "$(run_name "$name" "$seed_n")" "$set")
        need_files "$dir/hyp.detok"
        dirs+="${dirs:+,}$dir"
      done
      args+=(--system "$name=$dirs")
    done
    out=$(compare_dir "$set")
    outs+=("$set=$out")
    log "comparing ${names[*]} (seeds ${SEEDS:-1}) against $baseline on $set ($(( ${#refs[@]} / 2 )) reference$([ "${#refs[@]}" = 2 ] || echo s)) -> $out"
    python -m fairseq_mgsa.analysis.compare "${refs[@]}" "${args[@]}" --baseline "$baseline" "${lc[@]}" --out "$out" \
      || exit 1
  done
  if [ "${#TEST_NAMES[@]}" -gt 1 ]; then
    python "$COMMON_DIR/test_sets_table.py" --out "$WORKDIR/results/compare${RUN_SUFFIX:-}/test_sets.md" "${outs[@]}" \
      || exit 1
  fi
}
