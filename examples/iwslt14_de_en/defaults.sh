# The IWSLT14 recipe's settings, read by every step (sourced, not run); each can be set by
# environment. The settings every recipe shares are in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}

# 01: download
IWSLT_URL=${IWSLT_URL:-http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz}
VALID_EVERY=${VALID_EVERY:-23}

# 02: tokenisation and cleaning
WORKERS=${WORKERS:-4}                   # sacremoses processes
NORM_SPLITS=${NORM_SPLITS-}            # splits whose punctuation is normalised
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-0}   # 1: tokenizer.perl -a
LOWERCASE=${LOWERCASE:-1}
CLEAN_SPLITS=${CLEAN_SPLITS-train valid}
MAX_LEN=${MAX_LEN:-175}
LEN_RATIO=${LEN_RATIO:-1.5}

# 03-05: parsing, BPE, binaries
NUM_SHARDS=${NUM_SHARDS:-4}
BPE_MERGES=${BPE_MERGES:-10000}
SYSTEMS=${SYSTEMS:-transformer mgsa_syntactic}   # systems to train, score and compare (fairseq_mgsa/systems.py)

# 06: training (06_train.sh says where these come from). PRESET (README.md, "Presets"): `fairseq`
# (the default), fairseq's IWSLT14 schedule: 50,000 updates, the last AVG_N checkpoints averaged,
# one run at a time; `gpu`, the same model, batch and learning rate on one GPU stopped on
# validation loss (PATIENCE validations, one every VALID_INTERVAL updates, about an epoch, without
# a new best; MAX_UPDATE the cap), the best checkpoint decoded, RUN_JOBS runs sharing the GPU.
choose_preset fairseq iwslt14_de_en   # preset FAIRSEQ_VALUE GPU_VALUE below: ../common/settings.sh
ARCH_SIZE=iwslt
LR=${LR:-5e-4}
DROPOUT=${DROPOUT:-0.3}
WEIGHT_DECAY=${WEIGHT_DECAY:-0.0001}
MAX_UPDATE=${MAX_UPDATE:-50000}
MAX_TOKENS=${MAX_TOKENS:-4096}
UPDATE_FREQ=${UPDATE_FREQ:-1}
AVG_N=${AVG_N:-5}
PATIENCE=${PATIENCE-$(preset "" 5)}
VALID_INTERVAL=${VALID_INTERVAL:-$(preset "" 1000)}
DECODE_CHECKPOINT=${DECODE_CHECKPOINT:-$(preset average best)}
RUN_JOBS=${RUN_JOBS:-$(preset 1 2)}    # run_all.sh: runs at a time; with PRESET=gpu two share the GPU

# 07-08: decoding and scoring
BEAM=${BEAM:-5}
LENPEN=${LENPEN:-1.0}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}   # 1: split hyphenated compounds (##AT##) first, as for WMT En-De

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
