# The WMT17 Chinese-English recipe's settings (HySAN's second task: Song et al., large model,
# separate vocabularies of 40,000), read by every step (sourced, not run); each can be set by
# environment. The settings every recipe shares are in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

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
chinese_parser   # the trees: stanza's Chinese models, a parser trained on your treebank, or yours (../common/settings.sh)

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
vaswani_sizes big                   # MODEL_SIZE=big (the default) or base: ../common/settings.sh

# 07-08: decoding and scoring
BEAM=${BEAM:-4}
LENPEN=${LENPEN:-0.6}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
