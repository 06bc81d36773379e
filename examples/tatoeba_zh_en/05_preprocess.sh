#!/usr/bin/env bash
# Step 5: mgsa-preprocess: each side's BPE, a dictionary per side, fairseq binaries, and the
# Chinese side's phrase files (the top LEVELS levels of step 3's trees) with the tag dictionary,
# into DATA_BIN. When no system of SYSTEMS reads trees: the same BPE and fairseq-preprocess, no
# phrase files (the same dictionaries and token binaries: the tree-free systems train before the
# parser is there).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
preprocess_for_systems
