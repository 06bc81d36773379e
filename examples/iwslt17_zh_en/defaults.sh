# The IWSLT17 Chinese-English recipe's settings (TED talks, about 231k pairs: a Zh-En setup for one
# GPU), read by every step (sourced, not run); each can be set by environment. The settings every
# recipe shares are in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

WORKDIR=${WORKDIR:-$PWD/iwslt17_zh_en}
SRC=zh
TGT=en

# 01: WIT3's 2017-01-trnted release of the zh-en pair (train.tags.zh-en.*, and the dev and test
# sets of earlier years with their references as .xml), and the IWSLT17 test sets tst2016 and
# tst2017 from WIT3's 2017-01-ted-test archive: the Chinese from texts/zh/en/zh-en.tgz, the English
# of the same talks from texts/en/zh/en-zh.tgz (matched by talk and segment id)
IWSLT_TRAIN_URL=${IWSLT_TRAIN_URL:-https://huggingface.co/datasets/IWSLT/iwslt2017/resolve/main/data/2017-01-trnted/texts/zh/en/zh-en.zip}
WIT3_TEST_URL=${WIT3_TEST_URL:-https://raw.githubusercontent.com/hlt-mt/WIT3/master/archive/2017-01-ted-test/texts}
VALID_SETS=${VALID_SETS:-dev2010}   # the dev set: these of the training archive's sets, put together
TEST_SETS=${TEST_SETS:-tst2016 tst2017}
chinese_parser   # the trees: stanza's Chinese models, a parser trained on your treebank, or yours (../common/settings.sh)

# 02: the Chinese segmented into words (mgsa-segment-zh: jieba; ZH_T2S, ZH_USER_DICT in
# ../common/preamble.sh), the English Moses-tokenized, cased; training pairs cleaned
WORKERS=${WORKERS:-4}
NORM_SPLITS=${NORM_SPLITS-}
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-0}
LOWERCASE=${LOWERCASE:-0}
CLEAN_SPLITS=${CLEAN_SPLITS-train}
MAX_LEN=${MAX_LEN:-175}
LEN_RATIO=${LEN_RATIO:-3}

# 03-05: parsing, BPE (10,000 merges learnt on each side alone), binaries
NUM_SHARDS=${NUM_SHARDS:-4}
BPE_MERGES=${BPE_MERGES:-10000}
SEPARATE_VOCAB=${SEPARATE_VOCAB:-1}
SYSTEMS=${SYSTEMS:-transformer mgsa_syntactic hysan}

# 06: MODEL_SIZE picks the model and its schedule: `iwslt` (the default: fairseq's
# transformer_iwslt_de_en size, d 512, FFN 1024, 4 heads, on one GPU, 4096 tokens a batch, lr 5e-4,
# dropout 0.3, weight decay 1e-4, 50,000 updates, as fairseq's IWSLT recipe) or `base`
# (Transformer-Base on one GPU with an 8 x 4096-token batch by --update-freq, lr 7e-4, dropout 0.3,
# 50,000 updates)
SYSTEM=${SYSTEM:-mgsa_syntactic}
MODEL_SIZE=${MODEL_SIZE:-iwslt}
case "$MODEL_SIZE" in
  iwslt) LR=${LR:-5e-4}; PAPER_GPUS=${PAPER_GPUS:-1}; WEIGHT_DECAY=${WEIGHT_DECAY:-0.0001}; RUN_SUFFIX=${RUN_SUFFIX:-} ;;
  base)  LR=${LR:-7e-4}; PAPER_GPUS=${PAPER_GPUS:-8}; WEIGHT_DECAY=${WEIGHT_DECAY:-0.0}; RUN_SUFFIX=${RUN_SUFFIX:-_base} ;;
  *) echo "$(basename "$0"): error: MODEL_SIZE must be iwslt or base (got '$MODEL_SIZE')" >&2; exit 1 ;;
esac
ARCH_SIZE=$MODEL_SIZE
DROPOUT=${DROPOUT:-0.3}
MAX_UPDATE=${MAX_UPDATE:-50000}
MAX_TOKENS=${MAX_TOKENS:-4096}
AVG_N=${AVG_N:-5}

# 07-08: decoding and scoring
BEAM=${BEAM:-5}
LENPEN=${LENPEN:-1.0}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
