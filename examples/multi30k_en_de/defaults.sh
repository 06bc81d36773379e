# The Multi30k recipe's settings, read by every step (sourced, not run); each can be set by
# environment. The settings every recipe shares are in ../common/preamble.sh, sourced at the end.
# shellcheck shell=bash disable=SC2034  # the variables are read by the steps that source this file

# what several recipes share: functions this file calls with its own values (choose_preset, vaswani_sizes ...)
# shellcheck source=../common/settings.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/settings.sh"

SRC=en                     # English source: parsed by the recipe's own English parser
TGT=de
WORKDIR=${WORKDIR:-$PWD/multi30k_en_de}

# 01: the corpus (task 1 of multi30k/dataset: 29,000 / 1,014 / 1,000 pairs, test = test2016 Flickr)
# and the treebank the parser learns from (NLTK's 10% sample of the WSJ Penn Treebank, 3,914 trees)
MULTI30K_URL=${MULTI30K_URL:-https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw}
MULTI30K_TEST=${MULTI30K_TEST:-test_2016_flickr}
TREEBANK_URL=${TREEBANK_URL:-https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/treebank.zip}
TREEBANK_DIR=${TREEBANK_DIR:-$WORKDIR/treebank}   # treebank.zip, its .mrg files, split/{train,dev,test}.mrg
# The parser: treebank (default): trained here with mgsa-train-parser (step 03); stanza: stanza's
# pretrained English models (downloaded in step 01: needs network).
PARSER=${PARSER:-treebank}

# 02: Moses tokenisation, cased; punctuation normalised everywhere (the text is captions: no
# document conventions to keep); no hyphen splitting (the Penn Treebank keeps hyphenated words).
# No cleaning: the longest pair has 40 words, and the trees stay one per raw line.
WORKERS=${WORKERS:-2}
NORM_SPLITS=${NORM_SPLITS-train valid test}
AGGRESSIVE_DASH=${AGGRESSIVE_DASH:-0}
LOWERCASE=${LOWERCASE:-0}
CLEAN_SPLITS=${CLEAN_SPLITS-}
MAX_LEN=${MAX_LEN:-250}
LEN_RATIO=${LEN_RATIO:-9}

# 03: the English parser (PARSER=treebank): PARSER_DIR holds a model mgsa-train-parser trained on
# the treebank's split (a model already there is used as it is: delete it to retrain), with word
# vectors learnt (gensim word2vec) on the tokenized English training text.
PARSER_DIR=${PARSER_DIR:-$WORKDIR/parser}
PARSER_DEV=${PARSER_DEV:-400}      # the treebank's dev and test trees (the last ones), the rest trains
PARSER_TEST=${PARSER_TEST:-400}
PARSER_ARGS=${PARSER_ARGS:-}       # other mgsa-train-parser options
NUM_SHARDS=${NUM_SHARDS:-1}

# 04-05: joint BPE. 8,000 merges for 29,000 sentence pairs: a joint vocabulary of about 9k
# types, each seen often enough in 58k sentences to learn its embedding (see README.md).
BPE_MERGES=${BPE_MERGES:-8000}

# 06: PRESET picks the training settings (README.md says why these numbers): `cpu` (the default),
# size `cpu` of the registry on one CPU core a run, two runs at a time; `gpu`, size `iwslt` on one
# GPU, three runs sharing it. Both stop on validation loss (PATIENCE validations every
# VALID_INTERVAL updates without a new best), MAX_UPDATE the cap; the checkpoint with the best
# validation loss is the one decoded. Each setting can still be set by environment.
choose_preset cpu multi30k_en_de   # preset CPU_VALUE GPU_VALUE below: ../common/settings.sh
WARMUP=${WARMUP:-$(preset 400 2000)}
MAX_UPDATE=${MAX_UPDATE:-$(preset 2400 10000)}
PATIENCE=${PATIENCE-$(preset 3 5)}
VALID_INTERVAL=${VALID_INTERVAL:-$(preset 200 250)}
RUN_JOBS=${RUN_JOBS:-$(preset 2 3)}  # one thread a run on CPU, two runs at a time (run_all.sh); on one GPU three
small_model_presets                  # the rest of the two presets: ../common/settings.sh

# 07-09: beam 5; sacreBLEU and chrF on detokenized, cased text; the systems and seeds of the table
BEAM=${BEAM:-5}
LENPEN=${LENPEN:-1.0}
COMPOUND_SPLIT=${COMPOUND_SPLIT:-0}
SYSTEMS=${SYSTEMS:-transformer transformer_matched mgsa_ngram mgsa_syntactic pba_interleaved_queryk hysan}
SEEDS=${SEEDS:-1 2 3}
MULTI_SEED_SYSTEMS=${MULTI_SEED_SYSTEMS-transformer mgsa_syntactic}   # the others: the first seed only

# shellcheck source=../common/preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/preamble.sh"
