# The Tatoeba Chinese-English recipe's settings, read by every step (sourced, not run); each can be
# set by environment. The settings every recipe shares are in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

SRC=zh                     # Chinese source: segmented into words once (step 02), parsed by a Sinica-trained parser
TGT=en
WORKDIR=${WORKDIR:-$PWD/tatoeba_zh_en}

# 01: the corpus. CMN_TXT: the user's own copy of Tatoeba's cmn.txt (English TAB Chinese TAB
# attribution, CC-BY 2.0 FR); empty: downloaded from TATOEBA_URL, a public copy pinned by commit,
# and checked against TATOEBA_SHA256 (the file of 29,155 pairs this recipe was measured on).
CMN_TXT=${CMN_TXT:-}
TATOEBA_URL=${TATOEBA_URL:-https://raw.githubusercontent.com/13luoyu/Transformer-machine-translation/b172d4aa468126c16f51dbf75797aaff77cf787e/cmn.txt}
TATOEBA_SHA256=${TATOEBA_SHA256:-aa264a2447b26ab7c9d413f8321f9e2a779fd134b5118306b6e26a3499b3926e}
# the split (split_tatoeba.py): DEV_SENTENCES and TEST_SENTENCES distinct Chinese sentences, each
# with all its English translations; every other pair trains. SPLIT_SEED fixes which.
DEV_SENTENCES=${DEV_SENTENCES:-1000}
TEST_SENTENCES=${TEST_SENTENCES:-1500}
SPLIT_SEED=${SPLIT_SEED:-1}

# 02: Chinese segmented by mgsa-segment-zh (jieba), Traditional characters made Simplified first
# (Tatoeba mixes both; the Sinica parser's trees are converted to Simplified); English
# Moses-tokenized, cased, punctuation normalised. No cleaning (the longest pair is short).
ZH_T2S=${ZH_T2S:-1}
WORKERS=${WORKERS:-2}
NORM_SPLITS=${NORM_SPLITS-train valid test}
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-0}
LOWERCASE=${LOWERCASE:-0}
CLEAN_SPLITS=${CLEAN_SPLITS-}
MAX_LEN=${MAX_LEN:-250}
LEN_RATIO=${LEN_RATIO:-9}

# 03: the Chinese parser: a model directory mgsa-train-parser wrote from NLTK's Sinica sample
# (PARSER_DIR; README.md says how to make one), read through mgsa-preprocess's stanza path; or
# gold trees with TREES_DIR. Skipped when no system of SYSTEMS reads trees.
PARSER_DIR=${PARSER_DIR:-$WORKDIR/parser}
NUM_SHARDS=${NUM_SHARDS:-1}

# 04-05: separate BPE for each side (two scripts share no subwords), BPE_MERGES merges each: about
# 7.8k Chinese and 3.9k English types on 26k training pairs; separate dictionaries.
SEPARATE_VOCAB=${SEPARATE_VOCAB:-1}
BPE_MERGES=${BPE_MERGES:-4000}

# 06: the CPU preset (README.md says why these numbers): size `cpu` of the registry, one thread a
# run, one run at a time; stopped on validation BLEU (greedy, every VALID_INTERVAL updates,
# PATIENCE validations without a new best), MAX_UPDATE the cap; checkpoint_best.pt is decoded.
# The CPU rule waits 10 validations (1,500 updates, about 11 epochs) for a new best: greedy
# validation BLEU on 1,000 sentences goes up and down between validations near its top, and with
# 3 (450 updates) one run of a pair stopped 1,800 updates before the other while that one still gained.
# The cap only guards against a run that never stops; runs stop on the rule well below it.
choose_preset cpu tatoeba_zh_en   # preset CPU_VALUE GPU_VALUE below: ../common/settings.sh
WARMUP=${WARMUP:-$(preset 200 2000)}
MAX_UPDATE=${MAX_UPDATE:-$(preset 20000 10000)}
PATIENCE=${PATIENCE-$(preset 10 5)}
STOP_METRIC=${STOP_METRIC:-bleu}
VALID_INTERVAL=${VALID_INTERVAL:-$(preset 150 250)}
RUN_JOBS=${RUN_JOBS:-$(preset 1 3)}
small_model_presets                 # the rest of the two presets: ../common/settings.sh

# 07-09: beam 5; sacreBLEU and chrF on detokenized, cased text against every English translation
# of each test sentence (RAW_DIR/test.refs.tsv); the systems and seeds of the table
BEAM=${BEAM:-5}
LENPEN=${LENPEN:-1.0}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}
SYSTEMS=${SYSTEMS:-transformer mgsa_ngram mgsa_syntactic hysan}
SEEDS=${SEEDS:-1 2}
MULTI_SEED_SYSTEMS=${MULTI_SEED_SYSTEMS-$SYSTEMS}

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
