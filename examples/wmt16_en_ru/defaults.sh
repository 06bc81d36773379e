# The WMT16 English-Russian recipe's settings, read by every step (sourced, not run); each can be
# set by environment. The settings every recipe shares are in ../common/preamble.sh, sourced below.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

DIRECTION=${DIRECTION:-en-ru}          # en-ru: English source (parsed); ru-en: Russian source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/wmt16_${SRC}_${TGT}}

# 01: download. The public corpora come from statmt.org; two of the paper's need a registration
# and are read from where the user unpacked them (README.md, "Data"): empty, they are left out.
YANDEX_DIR=${YANDEX_DIR:-}              # Yandex's 1M corpus: corpus.en_ru.1m.{en,ru}
UN_DIR=${UN_DIR:-}                      # UN Parallel Corpus v1.0, en-ru: UNv1.0.en-ru.{en,ru}
WIKI_HEADLINES=${WIKI_HEADLINES:-1}     # 1: Wiki Headlines (public) in train
STATMT=${STATMT:-http://statmt.org}     # mirrors: set these two
DATA_STATMT=${DATA_STATMT:-http://data.statmt.org}

# 02: tokenisation and cleaning (Russian: mgsa_preprocess.moses_ru, sacremoses -l ru whose tokens detokenize back)
WORKERS=${WORKERS:-8}
# No punctuation normalisation by default, of any split: Moses' normalisation makes « » „ “ into "
# and — – into -, so a model trained on normalised text could never write the marks that
# newstest2014's raw references hold (README.md, "Expected results"). Set, it names every split.
NORM_SPLITS=${NORM_SPLITS-}
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-1}
LOWERCASE=${LOWERCASE:-0}               # the paper's BLEU is cased
CLEAN_SPLITS=${CLEAN_SPLITS-train}
MAX_LEN=${MAX_LEN:-250}
LEN_RATIO=${LEN_RATIO:-1.5}

# 03-05: parsing (English source only), BPE, binaries
NUM_SHARDS=${NUM_SHARDS:-64}
BPE_MERGES=${BPE_MERGES:-40000}         # the paper's joint 40,000 sub-words for En-Ru
# systems to train, score and compare: a Russian source gets n-gram MG-SA (no Russian parser)
if [ "$SRC" = ru ]; then
  SYSTEMS=${SYSTEMS:-transformer mgsa_ngram}
  SYSTEM=${SYSTEM:-mgsa_ngram}
else
  SYSTEMS=${SYSTEMS:-transformer mgsa_syntactic}
  SYSTEM=${SYSTEM:-mgsa_syntactic}
fi

# 06-07: the model size and what goes with it (06_train.sh says where these come from)
AVG_N=${AVG_N:-5}                  # the paper: the last 5 checkpoints, base and big
SAVE_INTERVAL_UPDATES=${SAVE_INTERVAL_UPDATES:-10000}   # the paper saved every 10,000 updates
vaswani_sizes base                  # MODEL_SIZE=base (the default) or big: ../common/settings.sh

# 07-08: decoding and scoring (the paper: beam 5, length penalty 0.6, cased BLEU)
BEAM=${BEAM:-5}
LENPEN=${LENPEN:-0.6}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}   # the ##AT## splitting is En-De's convention

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"

case "$SRC-$TGT" in
  en-ru|ru-en) ;;
  *) die "DIRECTION (or SRC/TGT) must be en-ru or ru-en (got $SRC-$TGT)" ;;
esac

# A Russian source has no parser here (stanza has no Russian constituency model): systems that
# read trees of the source stop now, before any step works, unless the user brings trees or a
# parser trained with mgsa-train-parser.
check_russian_trees() {
  local name with_trees=()
  [ "$SRC" = ru ] && [ -z "$TREES_DIR" ] && [ ! -f "$STANZA_DIR/mgsa_parser.json" ] || return 0
  for name in $SYSTEMS $SYSTEM; do
    if [ "$(systems_py get "$name" needs_trees)" = true ] && ! in_list "$name" "${with_trees[*]-}"; then
      with_trees+=("$name")
    fi
  done
  [ "${#with_trees[@]}" = 0 ] || die "${with_trees[*]} read constituency trees of the source, and stanza has no Russian parser: give Russian trees (TREES_DIR=<folder of {train,valid,test}.ru.tree>) or a parser trained with mgsa-train-parser (STANZA_DIR=<its folder>), or systems without trees (SYSTEMS=\"transformer mgsa_ngram\": n-gram MG-SA)"
}
check_russian_trees

# Train and test normalised alike or not at all: else the test set holds marks training never shows.
check_norm_splits() {
  local split missing=()
  [ -n "$NORM_SPLITS" ] || return 0
  for split in "${SPLITS[@]}"; do in_list "$split" "$NORM_SPLITS" || missing+=("$split"); done
  [ "${#missing[@]}" = 0 ] || die "NORM_SPLITS='$NORM_SPLITS' leaves out ${missing[*]}: punctuation normalised in some splits only leaves the test set with marks that training never shows (the references' guillemets, low-high quotes and dashes are \" and - in training); set NORM_SPLITS empty (the default) or to every split: '${SPLITS[*]}'"
}
check_norm_splits
