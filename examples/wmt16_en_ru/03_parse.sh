#!/usr/bin/env bash
# Step 3: constituency trees of the source side -> WORKDIR/tok/{split}.$SRC.tree, as in
# ../wmt14_en_de/03_parse.sh: gold trees from TREES_DIR, else stanza in NUM_SHARDS shards
# (SHARD_ID=I: one shard, a SLURM array task), merged. English source only: a Russian source
# has no parser here, so its systems read no trees (defaults.sh refuses those that do) unless
# the user gives Russian trees (TREES_DIR) or a parser trained with mgsa-train-parser (STANZA_DIR).
#   Skipped when no system of SYSTEMS reads trees.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
GPUS=${GPUS:-$(num_gpus)}                             # GPUs to parse on (0: CPU)
PARSE_JOBS=${PARSE_JOBS:-$((GPUS > 0 ? GPUS : 1))}    # shards parsed at the same time
if [ -n "$SHARD_ID" ]; then step_parse_shard_only; else exit_unless_trees_needed; run_parse; fi
