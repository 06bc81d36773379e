# The WMT17 Chinese-English recipe's settings (HySAN's second task: Song et al., large model,
# separate vocabularies of 40,000), read by every step (sourced, not run); each can be set by
# environment. The settings every recipe shares are in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

WORKDIR=${WORKDIR:-$PWD/wmt17_zh_en}
SRC=zh
TGT=en

# 01: WMT17's public data from statmt.org: news-commentary v12 (zh-en), newsdev2017 (dev),
# newstest2017 (test, SGML); the two larger corpora need your own copies (README.md): the UN
# Parallel Corpus v1.0 and the CWMT corpora, each as two parallel plain files (the Chinese, the
# English), several pairs space-separated: "a.zh=a.en b.zh=b.en"
DATA_STATMT=${DATA_STATMT:-http://data.statmt.org}
WMT17_EXTRA_CORPORA=${WMT17_EXTRA_CORPORA:-}
TEST_SETS=${TEST_SETS:-newstest2017}
# any other test set in SGML or XML (e.g. a newer WMT's): TEST_SRC/TEST_REF name its files and
# TEST_SETS its name; by default newstest2017's SGML from the test archive
TEST_SRC=${TEST_SRC:-}
TEST_REF=${TEST_REF:-}
# the trees: stanza's Chinese models (fetched in step 01: needs network), a parser trained on
# your Chinese treebank (PARSER=treebank: PARSER_TRAIN_TREES ...), or your trees (TREES_DIR)
PARSER=${PARSER:-stanza}
PARSER_DIR=${PARSER_DIR:-$WORKDIR/parser}
PARSER_TRAIN_TREES=${PARSER_TRAIN_TREES:-}
PARSER_DEV_TREES=${PARSER_DEV_TREES:-}
PARSER_TEST_TREES=${PARSER_TEST_TREES:-}
PARSER_ARGS=${PARSER_ARGS:-}

# 02: the Chinese segmented into words (mgsa-segment-zh: jieba; ZH_T2S, ZH_USER_DICT in
# ../common/preamble.sh), the English Moses-tokenized, cased; training pairs cleaned
WORKERS=${WORKERS:-8}
NORM_SPLITS=${NORM_SPLITS-train valid}
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-0}
LOWERCASE=${LOWERCASE:-0}
CLEAN_SPLITS=${CLEAN_SPLITS-train}
MAX_LEN=${MAX_LEN:-250}
LEN_RATIO=${LEN_RATIO:-3}

# 03-05: parsing, BPE (separate codes of 40,000 merges a side, as HySAN's separate 40k
# vocabularies), binaries
NUM_SHARDS=${NUM_SHARDS:-64}
BPE_MERGES=${BPE_MERGES:-40000}
SEPARATE_VOCAB=${SEPARATE_VOCAB:-1}
SYSTEMS=${SYSTEMS:-transformer hysan}   # HySAN's WMT17 comparison (fairseq_mgsa/systems.py)

# 06-07: the model size (HySAN: the large model on WMT17) and Vaswani et al.'s schedule for it
SYSTEM=${SYSTEM:-hysan}
MODEL_SIZE=${MODEL_SIZE:-big}
case "$MODEL_SIZE" in
  base) LR=${LR:-7e-4}; DROPOUT=${DROPOUT:-0.1}; MAX_UPDATE=${MAX_UPDATE:-100000}; AVG_N=${AVG_N:-5}
        RUN_SUFFIX=${RUN_SUFFIX:-_base} ;;
  big)  LR=${LR:-5e-4}; DROPOUT=${DROPOUT:-0.3}; MAX_UPDATE=${MAX_UPDATE:-300000}; AVG_N=${AVG_N:-20}
        RUN_SUFFIX=${RUN_SUFFIX:-} ;;
  *) echo "$(basename "$0"): error: MODEL_SIZE must be base or big (got '$MODEL_SIZE')" >&2; exit 1 ;;
esac
ARCH_SIZE=$MODEL_SIZE
MAX_TOKENS=${MAX_TOKENS:-4096}     # per GPU
PAPER_GPUS=${PAPER_GPUS:-8}        # the batch is PAPER_GPUS x MAX_TOKENS whatever GPUS is
WEIGHT_DECAY=${WEIGHT_DECAY:-0.0}

# 07-08: decoding and scoring
BEAM=${BEAM:-4}
LENPEN=${LENPEN:-0.6}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
