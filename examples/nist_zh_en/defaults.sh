# The NIST Chinese-English recipe's settings (MG-SA's second task: Hao et al. 2019, Table 4), read
# by every step (sourced, not run); each can be set by environment. The paths of your LDC files
# are in one place: NIST_PATHS (paths.sh beside this file). The settings every recipe shares are
# in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

WORKDIR=${WORKDIR:-$PWD/nist_zh_en}
SRC=zh
TGT=en

# 01: your LDC files (NIST_PATHS), written into RAW_DIR as train, valid (MT02) and the test sets
# mt03 ... mt06, each with its four references (RAW_DIR/mt03.en, mt03.en.ref1 ... ref3)
NIST_PATHS=${NIST_PATHS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/paths.sh}
TEST_SETS=${TEST_SETS:-mt03 mt04 mt05 mt06}
chinese_parser   # the trees: stanza's Chinese models, a parser trained on your treebank, or yours (../common/settings.sh)

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
vaswani_sizes base                  # MODEL_SIZE=base (the default) or big: ../common/settings.sh

# 07-08: decoding and scoring: case-sensitive BLEU with the four references
BEAM=${BEAM:-4}
LENPEN=${LENPEN:-0.6}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
