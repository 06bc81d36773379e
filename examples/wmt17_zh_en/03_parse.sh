#!/usr/bin/env bash
# Step 3: constituency trees of the segmented Chinese -> WORKDIR/tok/{split}.zh.tree, their
# leaves the words of step 2 (tokenize_pretokenized: the parser never re-segments):
#   PARSER=stanza: stanza's Chinese models (zh-hans, fetched in step 1: needs network);
#   PARSER=treebank: a parser mgsa-train-parser trains on your Chinese treebank
#     (PARSER_TRAIN_TREES, PARSER_DEV_TREES, PARSER_TEST_TREES: README.md) into PARSER_DIR,
#     with word vectors from the segmented training text; its test F1 in PARSER_DIR/test_f1.txt;
#   TREES_DIR set: your trees TREES_DIR/{split}.zh.tree, one per raw line, no parser.
# Parsed in NUM_SHARDS shards, PARSE_JOBS at a time, one per GPU; SHARD_ID=I parses shard I only
# (a SLURM array task), then run without it to merge. Skipped when no system of SYSTEMS reads trees.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
GPUS=${GPUS:-$(num_gpus)}                             # GPUs to parse on (0: CPU)
PARSE_JOBS=${PARSE_JOBS:-$((GPUS > 0 ? GPUS : 1))}    # shards parsed at the same time
if [ -n "$SHARD_ID" ]; then choose_parser; step_parse_shard_only; else exit_unless_trees_needed; choose_parser; run_parse; fi
