# The NIST Chinese-English data, from your LDC copies: every path the recipe reads, in this one
# file (README.md lists what to obtain from LDC). Edit it, or copy it and point NIST_PATHS at the
# copy; each path can also be set by environment. 01_download.sh checks every one before it reads.
# shellcheck shell=bash disable=SC2034  # read by 01_download.sh

# The training corpus, one sentence a line, the two files parallel (the LDC corpora's sentence
# pairs put together: README.md says how). Raw text: the recipe segments the Chinese itself.
NIST_TRAIN_ZH=${NIST_TRAIN_ZH:-}
NIST_TRAIN_EN=${NIST_TRAIN_EN:-}

# Each evaluation set: the source (SGML with a <srcset>, or LDC's XML) and its references, one
# file holding all four (four <refset>s, or one <refset> whose documents' sysid tells the four
# apart) or several files (space-separated). MT02 is the dev set, MT03-MT06 the test sets.
NIST_MT02_SRC=${NIST_MT02_SRC:-}
NIST_MT02_REF=${NIST_MT02_REF:-}
NIST_MT03_SRC=${NIST_MT03_SRC:-}
NIST_MT03_REF=${NIST_MT03_REF:-}
NIST_MT04_SRC=${NIST_MT04_SRC:-}
NIST_MT04_REF=${NIST_MT04_REF:-}
NIST_MT05_SRC=${NIST_MT05_SRC:-}
NIST_MT05_REF=${NIST_MT05_REF:-}
NIST_MT06_SRC=${NIST_MT06_SRC:-}
NIST_MT06_REF=${NIST_MT06_REF:-}
