# The WMT14 En-De recipe's settings, read by every step (sourced, not run); each can be set by
# environment. The settings every recipe shares are in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
SRC=${SRC:-en}
TGT=${TGT:-de}

# 01: download
NEWS_COMMENTARY=${NEWS_COMMENTARY:-v9}          # v9: WMT14's (the paper's); v12: fairseq's default
STATMT=${STATMT:-http://statmt.org}               # mirrors: set these two
DATA_STATMT=${DATA_STATMT:-http://data.statmt.org}

# 02: tokenisation and cleaning
WORKERS=${WORKERS:-8}                  # sacremoses processes
NORM_SPLITS=${NORM_SPLITS-train valid} # splits whose punctuation is normalised
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-1}  # 1: tokenizer.perl -a
LOWERCASE=${LOWERCASE:-0}
CLEAN_SPLITS=${CLEAN_SPLITS-train}
MAX_LEN=${MAX_LEN:-250}
LEN_RATIO=${LEN_RATIO:-1.5}

# 03-05: parsing, BPE, binaries
NUM_SHARDS=${NUM_SHARDS:-64}
BPE_MERGES=${BPE_MERGES:-32000}
SYSTEMS=${SYSTEMS:-mgsa_syntactic}   # systems to train, score and compare (fairseq_mgsa/systems.py)

# 06-07: the model size and what goes with it (06_train.sh says where these come from)
SYSTEM=${SYSTEM:-mgsa_syntactic}   # the paper's full MG-SA
vaswani_sizes base                  # MODEL_SIZE=base (the default) or big: ../common/settings.sh

# 07-08: decoding and scoring
BEAM=${BEAM:-4}
LENPEN=${LENPEN:-0.6}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-1}

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
