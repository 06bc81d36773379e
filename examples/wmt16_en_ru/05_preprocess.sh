#!/usr/bin/env bash
# Step 5: mgsa-preprocess: BPE on both sides, a joined dictionary (for --share-all-embeddings),
# fairseq binaries, and the source's phrase files (the top LEVELS levels of the trees of
# step 3) with the tag dictionary, into DATA_BIN. Report: DATA_BIN/mgsa_preprocess_report.txt.
# When no system of SYSTEMS reads trees (a Russian source): the same BPE and fairseq-preprocess,
# no phrase files.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
preprocess_for_systems
