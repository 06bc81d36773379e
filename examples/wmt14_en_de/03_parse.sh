#!/usr/bin/env bash
# Step 3: constituency trees of the source side -> WORKDIR/tok/{split}.$SRC.tree.
#   TREES_DIR set: gold trees TREES_DIR/{split}.$SRC.tree (one per raw line, leaves = the
#     Moses tokens) are copied, minus the pairs cleaning dropped.
#   Else stanza (on GPU when there is one) parses the tokenized source in NUM_SHARDS shards,
#     PARSE_JOBS at a time, job j on GPU j (mgsa-preprocess --num-shards N --shard-id I), and
#     the shards are checked and merged. A rerun parses only the shards not done yet.
#     SHARD_ID=I parses shard I only (one task of a SLURM array, see README.md); run without
#     it afterwards to merge.
#   Skipped when no system of SYSTEMS reads trees.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
GPUS=${GPUS:-$(num_gpus)}                             # GPUs to parse on (0: CPU)
PARSE_JOBS=${PARSE_JOBS:-$((GPUS > 0 ? GPUS : 1))}    # shards parsed at the same time
if [ -n "$SHARD_ID" ]; then step_parse_shard_only; else exit_unless_trees_needed; run_parse; fi
