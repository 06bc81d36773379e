# The preamble every recipe script shares: the defaults common to all recipes, then the shared
# helpers (lib.sh) and the step functions (data_steps.sh: steps 02, 04, 05; parser_steps.sh: 03
# and the parsers; system_steps.sh: 06-09),
# then the check of the settings. Sourced at the end of a recipe's defaults.sh, which sets the
# recipe's own settings first (SRC, TGT, WORKDIR, corpus sizes ...: those below may use them, and
# a recipe may set any of these itself). Every variable can be set by environment.
# shellcheck shell=bash

# Every setting is an environment variable and no script takes arguments: --help prints the
# script's own header (what it does and its settings' examples), anything else is refused
# before a step starts (a mistyped `run_all.sh SYSTEMS=x` would otherwise run the defaults).
if [ $# -gt 0 ]; then
  case $1 in
    -h | --help)
      sed -n '2,/^[^#]/{/^#/!d;s/^# \{0,1\}//;p}' "$0"
      exit 0 ;;
    *)
      echo "$(basename "$0"): takes no arguments (got: $*): every setting is an environment variable, e.g." \
        "SYSTEMS=\"transformer mgsa_syntactic\" bash $0 (--help: the script's own settings)" >&2
      exit 2 ;;
  esac
fi

RAW_DIR=${RAW_DIR:-$WORKDIR/raw}                  # {train,valid,test}.{SRC,TGT}, untokenized
DATA_BIN=${DATA_BIN:-$WORKDIR/data-bin}           # fairseq binaries (+ phrase files)
SKIP_DOWNLOAD=${SKIP_DOWNLOAD:-0}                 # 1: the raw files are in RAW_DIR already (checked)
CONNECT_TIMEOUT=${CONNECT_TIMEOUT:-10}            # seconds
FROM_STEP=${FROM_STEP:-1}                         # run_all.sh: start at this step

# the test sets (README.md of each recipe): RAW_DIR/NAME.{SRC,TGT} for each NAME, and any further
# references of NAME as RAW_DIR/NAME.TGT.ref1, NAME.TGT.ref2, ... (NIST's four: NAME.TGT is the first)
TEST_SETS=${TEST_SETS:-test}

# a Chinese side (SRC or TGT zh): segmented into words once, in step 02 (mgsa-segment-zh), and every
# later step reads those words; none of the English-only steps (Moses, lowercasing) touches it
ZH_T2S=${ZH_T2S:-0}                               # 1: Traditional characters converted to Simplified first
ZH_USER_DICT=${ZH_USER_DICT:-}                    # a jieba user dictionary (one word a line, optional frequency and tag)
# 1: separate source and target BPE codes (BPE_MERGES each) and dictionaries, embeddings shared only
# between the decoder's input and output (two scripts share no subwords); 0: joint BPE, one dictionary
SEPARATE_VOCAB=${SEPARATE_VOCAB:-0}

# parsing (step 3) and phrase files (step 5)
STANZA_DIR=${STANZA_DIR:-$WORKDIR/stanza_resources}
if [ "$SRC" = zh ]; then PARSER_LANG=${PARSER_LANG:-zh-hans}; else PARSER_LANG=${PARSER_LANG:-$SRC}; fi   # stanza's names
TREES_DIR=${TREES_DIR:-}                          # gold trees instead of a parser: no models needed
PARSER_BATCH_SIZE=${PARSER_BATCH_SIZE:-256}
SHARD_ID=${SHARD_ID:-}      # set: parse only this shard and stop (one SLURM array task, see README.md)
LEVELS=${LEVELS:-3}
LENIENT=${LENIENT:-0}       # 1: a tree that does not fit its line becomes a flat partition (counted in the report)

# the run (steps 6-9): SYSTEM picks the system (fairseq_mgsa/systems.py); `python -m
# fairseq_mgsa.systems` lists them
SYSTEM=${SYSTEM:-mgsa_syntactic}   # the paper's full MG-SA
SYSTEM_ARGS=${SYSTEM_ARGS:-}       # options after the system's own, e.g. --mgsa-interaction lstm (an ablation)
SEED=${SEED:-1}
SEEDS=${SEEDS:-1}                  # run_all.sh: every system is trained with each (run names get _seedN)
if [ -z "${RUN_NAME:-}" ]; then     # as run_all.sh names runs (system_steps.sh: run_name)
  RUN_NAME=$SYSTEM${RUN_SUFFIX:-}
  [ "$SEED" = 1 ] || RUN_NAME+=_seed$SEED
fi
CKPT_DIR=${CKPT_DIR:-$WORKDIR/checkpoints/$RUN_NAME}
BASELINE=${BASELINE:-transformer}  # step 9 compares every system with it
WARMUP=${WARMUP:-4000}
WARMUP_INIT_LR=${WARMUP_INIT_LR:-1e-07}
LABEL_SMOOTHING=${LABEL_SMOOTHING:-0.1}
SAVE_INTERVAL_UPDATES=${SAVE_INTERVAL_UPDATES:-1000}
LOG_INTERVAL=${LOG_INTERVAL:-100}
PATIENCE=${PATIENCE:-}             # set: stop on validation (fairseq_mgsa/analysis/compare/stopping.py), MAX_UPDATE the cap
STOP_METRIC=${STOP_METRIC:-loss}   # with PATIENCE: the validation score, loss or bleu (greedy, BPE removed)
VALID_INTERVAL=${VALID_INTERVAL:-$SAVE_INTERVAL_UPDATES}   # with PATIENCE: validate (and save) every so many updates
RUN_JOBS=${RUN_JOBS:-1}            # run_all.sh: runs trained at the same time (logs in WORKDIR/logs/RUN.log)
THREADS=${THREADS:-}               # CPU threads a run (OMP_NUM_THREADS); empty: torch's default
FP16=${FP16:-auto}                 # auto: on when torch sees a GPU
FAIRSEQ_EXTRA=${FAIRSEQ_EXTRA:-}   # any other fairseq-train flags, e.g. --cpu
GEN_MAX_TOKENS=${GEN_MAX_TOKENS:-8000}
DECODE_CHECKPOINT=${DECODE_CHECKPOINT:-average}   # average: of the last AVG_N checkpoints; best: on validation
GEN_EXTRA=${GEN_EXTRA:-}           # other fairseq-generate flags, e.g. --cpu
USER_DIR=${USER_DIR:-}             # --user-dir; empty: the fairseq_mgsa package Python finds (what mgsa-user-dir prints)

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=data_steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/data_steps.sh"
# shellcheck source=system_steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/system_steps.sh"
# shellcheck source=parser_steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/parser_steps.sh"

# check_settings: every setting a step reads (the recipe's variables, from its defaults.sh and the
# environment), checked before any step works; a bad one stops the script with one line naming
# each (examples/common/check_settings.py). Run below, so every step script runs it. The names
# the environment gave (exported; defaults.sh exports nothing) go with them: a few checks concern
# only what the user set.
check_settings() {
  local name
  for name in $(compgen -v); do
    if [[ "$name" =~ ^[A-Z][A-Z0-9_]*$ ]]; then printf '%s=%s\0' "$name" "${!name-}"; fi
  done | python "$COMMON_DIR/check_settings.py" --prog "$(basename "$0")" --user-dir "${USER_DIR:-}" \
    --given "$(compgen -e | tr '\n' ' ')" || exit 1   # exported: from the environment, not defaults.sh
}

# a typo in any setting stops here, before the step works (not hours later in the step that reads it)
check_settings
