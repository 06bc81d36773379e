#!/usr/bin/env bash
# Step 5: mgsa-preprocess: BPE on both sides, a joined dictionary (for --share-all-embeddings),
# fairseq binaries, and the source's phrase files (the top LEVELS levels of the trees of
# step 3) with the tag dictionary, into DATA_BIN. Report: DATA_BIN/mgsa_preprocess_report.txt.
# When no system of SYSTEMS reads trees: the same BPE and fairseq-preprocess, no phrase files.
set -euo pipefail

WORKDIR=${WORKDIR:-$PWD/wmt14_en_de}
SRC=${SRC:-en}
TGT=${TGT:-de}
DATA_BIN=${DATA_BIN:-$WORKDIR/data-bin}
BPE_MERGES=${BPE_MERGES:-32000}
LEVELS=${LEVELS:-3}
WORKERS=${WORKERS:-8}
LENIENT=${LENIENT:-0}      # 1: a tree that does not fit its line becomes a flat partition (counted in the report)
SYSTEMS=${SYSTEMS:-mgsa_syntactic}   # phrase files only when one of them reads trees (fairseq_mgsa/systems.py)

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
preprocess_for_systems
