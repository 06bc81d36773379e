#!/usr/bin/env bash
# Step 5: mgsa-preprocess: each side's BPE applied, a dictionary per side, fairseq binaries (the
# test sets of TEST_SETS as test, test1, ...), and the source's phrase files (the top LEVELS levels
# of step 3's trees) with the tag dictionary, into DATA_BIN. Report: DATA_BIN/mgsa_preprocess_report.txt.
# When no system of SYSTEMS reads trees: the same BPE and fairseq-preprocess, no phrase files.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
preprocess_for_systems
