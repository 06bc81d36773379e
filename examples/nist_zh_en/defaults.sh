# The NIST Chinese-English recipe's settings (MG-SA's second task: Hao et al. 2019, Table 4), read
# by every step (sourced, not run); each can be set by environment. The paths of your LDC files
# are in one place: NIST_PATHS (paths.sh beside this file). The settings every recipe shares are
# in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

WORKDIR=${WORKDIR:-$PWD/nist_zh_en}
SRC=zh
TGT=en

# 01: your LDC files (NIST_PATHS), written into RAW_DIR as train, valid (MT02) and the test sets
# mt03 ... mt06, each with its four references (RAW_DIR/mt03.en, mt03.en.ref1 ... ref3)
NIST_PATHS=${NIST_PATHS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/paths.sh}
TEST_SETS=${TEST_SETS:-mt03 mt04 mt05 mt06}
# the trees: stanza's Chinese models (fetched in step 01: needs network), a parser trained on
# your Chinese treebank (PARSER=treebank: PARSER_TRAIN_TREES ...), or your trees (TREES_DIR)
PARSER=${PARSER:-stanza}
PARSER_DIR=${PARSER_DIR:-$WORKDIR/parser}
PARSER_TRAIN_TREES=${PARSER_TRAIN_TREES:-}
PARSER_DEV_TREES=${PARSER_DEV_TREES:-}
PARSER_TEST_TREES=${PARSER_TEST_TREES:-}
PARSER_ARGS=${PARSER_ARGS:-}

# 02: the Chinese segmented into words (mgsa-segment-zh: jieba; ZH_T2S, ZH_USER_DICT in
# ../common/preamble.sh), the English Moses-tokenized, cased (BLEU is case-sensitive); training
# pairs cleaned: 1-MAX_LEN words a side, at most LEN_RATIO times as many words on one side
WORKERS=${WORKERS:-8}
NORM_SPLITS=${NORM_SPLITS-train valid}
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-0}
LOWERCASE=${LOWERCASE:-0}
CLEAN_SPLITS=${CLEAN_SPLITS-train}
MAX_LEN=${MAX_LEN:-250}
LEN_RATIO=${LEN_RATIO:-3}

# 03-05: parsing, BPE (the paper's 32K merges, learnt on each side alone), binaries
NUM_SHARDS=${NUM_SHARDS:-32}
BPE_MERGES=${BPE_MERGES:-32000}
SEPARATE_VOCAB=${SEPARATE_VOCAB:-1}
SYSTEMS=${SYSTEMS:-transformer mgsa_syntactic}   # the paper's Table 4 rows (fairseq_mgsa/systems.py)

# 06-07: the model size and what goes with it, as the paper ran them (8 GPUs x 4096 tokens, Vaswani et al.'s schedule)
SYSTEM=${SYSTEM:-mgsa_syntactic}
MODEL_SIZE=${MODEL_SIZE:-base}
case "$MODEL_SIZE" in
  base) LR=${LR:-7e-4}; DROPOUT=${DROPOUT:-0.1}; MAX_UPDATE=${MAX_UPDATE:-100000}; AVG_N=${AVG_N:-5}
        RUN_SUFFIX=${RUN_SUFFIX:-} ;;
  big)  LR=${LR:-5e-4}; DROPOUT=${DROPOUT:-0.3}; MAX_UPDATE=${MAX_UPDATE:-300000}; AVG_N=${AVG_N:-20}
        RUN_SUFFIX=${RUN_SUFFIX:-_big} ;;
  *) echo "$(basename "$0"): error: MODEL_SIZE must be base or big (got '$MODEL_SIZE')" >&2; exit 1 ;;
esac
ARCH_SIZE=$MODEL_SIZE
MAX_TOKENS=${MAX_TOKENS:-4096}     # per GPU
PAPER_GPUS=${PAPER_GPUS:-8}        # the batch is PAPER_GPUS x MAX_TOKENS whatever GPUS is
WEIGHT_DECAY=${WEIGHT_DECAY:-0.0}

# 07-08: decoding and scoring: case-sensitive BLEU with the four references
BEAM=${BEAM:-4}
LENPEN=${LENPEN:-0.6}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
