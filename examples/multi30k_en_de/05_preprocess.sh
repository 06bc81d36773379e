#!/usr/bin/env bash
# Step 5: mgsa-preprocess: BPE on both sides, a joined dictionary, fairseq binaries, and the
# English side's phrase files (the top LEVELS levels of step 3's trees) with the tag dictionary,
# into DATA_BIN. When no system of SYSTEMS reads trees: the same BPE and fairseq-preprocess, no
# phrase files; the dictionary and token binaries are the same bytes either way (the tree-free
# systems can train before the parser exists: tests/end_to_end/test_recipe_multi30k.py checks it).
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
preprocess_for_systems
