# The settings several recipes share, as functions a recipe's defaults.sh calls with what is its
# own: sourced at the top of defaults.sh (../common/preamble.sh, sourced at its end, sets the
# settings every recipe shares alike). Each keeps a value the environment gave (VAR=${VAR:-...}),
# and the recipe's own values are set before the call, so the first assignment wins.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source defaults.sh

# choose_preset DEFAULT RECIPE: PRESET, DEFAULT or gpu (RECIPE's README.md, "Presets"); another
# stops with one line, before any work.
choose_preset() {
  PRESET=${PRESET:-$1}
  case $PRESET in
    "$1" | gpu) ;;
    *) echo "PRESET='$PRESET': expected $1 or gpu (examples/$2/README.md)" >&2; exit 2 ;;
  esac
}

# preset VALUE GPU_VALUE: the value for the chosen PRESET (GPU_VALUE with PRESET=gpu).
preset() { if [ "$PRESET" = gpu ]; then echo "$2"; else echo "$1"; fi; }

# small_model_presets: the rest of the `cpu` and `gpu` presets of the recipes sized for a CPU
# (multi30k_en_de, tatoeba_zh_en; their README.md says why these numbers): size `cpu` of the
# registry on one thread a run, or size `iwslt` on one GPU; stopped on validation (the recipe's
# PATIENCE, VALID_INTERVAL: a checkpoint at each validation), the best checkpoint decoded.
small_model_presets() {
  ARCH_SIZE=${ARCH_SIZE:-$(preset cpu iwslt)}
  LR=${LR:-$(preset 2e-3 5e-4)}
  DROPOUT=${DROPOUT:-$(preset 0.1 0.3)}
  WEIGHT_DECAY=${WEIGHT_DECAY:-0.0001}
  MAX_TOKENS=${MAX_TOKENS:-$(preset 2048 4096)}
  UPDATE_FREQ=${UPDATE_FREQ:-1}
  SAVE_INTERVAL_UPDATES=${SAVE_INTERVAL_UPDATES:-$VALID_INTERVAL}
  AVG_N=${AVG_N:-1}                  # interval checkpoints kept (besides checkpoint_best.pt and _last)
  LOG_INTERVAL=${LOG_INTERVAL:-50}
  DECODE_CHECKPOINT=${DECODE_CHECKPOINT:-best}
  THREADS=${THREADS:-$(preset 1 "")}  # on CPU: one thread a run
}

# vaswani_sizes DEFAULT_SIZE: MODEL_SIZE (base or big; DEFAULT_SIZE unless given) and Vaswani et
# al.'s (2017) schedule for it, on a batch of PAPER_GPUS x MAX_TOKENS tokens whatever the GPUs:
#   base: lr 7e-4 (= 512^-0.5 * 4000^-0.5, their peak), dropout 0.1, 100k updates, the last 5 averaged;
#   big:  lr 5e-4 (= 1024^-0.5 * 4000^-0.5), dropout 0.3, 300k updates, the last 20 averaged.
# RUN_SUFFIX: empty for DEFAULT_SIZE, _SIZE for the other (its runs and tables sit beside).
vaswani_sizes() {
  MODEL_SIZE=${MODEL_SIZE:-$1}
  case "$MODEL_SIZE" in
    base) LR=${LR:-7e-4}; DROPOUT=${DROPOUT:-0.1}; MAX_UPDATE=${MAX_UPDATE:-100000}; AVG_N=${AVG_N:-5} ;;
    big)  LR=${LR:-5e-4}; DROPOUT=${DROPOUT:-0.3}; MAX_UPDATE=${MAX_UPDATE:-300000}; AVG_N=${AVG_N:-20} ;;
    *) echo "$(basename "$0"): error: MODEL_SIZE must be base or big (got '$MODEL_SIZE')" >&2; exit 1 ;;
  esac
  if [ "$MODEL_SIZE" = "$1" ]; then RUN_SUFFIX=${RUN_SUFFIX:-}; else RUN_SUFFIX=${RUN_SUFFIX:-_$MODEL_SIZE}; fi
  ARCH_SIZE=$MODEL_SIZE
  MAX_TOKENS=${MAX_TOKENS:-4096}     # per GPU
  PAPER_GPUS=${PAPER_GPUS:-8}        # the batch is PAPER_GPUS x MAX_TOKENS whatever GPUS is
  WEIGHT_DECAY=${WEIGHT_DECAY:-0.0}
}

# chinese_parser: the trees of a Chinese source: stanza's Chinese models (fetched in step 01:
# needs network), a parser trained on your Chinese treebank (PARSER=treebank:
# PARSER_TRAIN_TREES ...), or your trees (TREES_DIR)
chinese_parser() {
  PARSER=${PARSER:-stanza}
  PARSER_DIR=${PARSER_DIR:-$WORKDIR/parser}
  PARSER_TRAIN_TREES=${PARSER_TRAIN_TREES:-}
  PARSER_DEV_TREES=${PARSER_DEV_TREES:-}
  PARSER_TEST_TREES=${PARSER_TEST_TREES:-}
  PARSER_ARGS=${PARSER_ARGS:-}
}
