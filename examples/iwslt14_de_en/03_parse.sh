#!/usr/bin/env bash
# Step 3: constituency trees of the source side (German for de-en, English for en-de, parsed by
# stanza in that language) -> WORKDIR/tok/{split}.$SRC.tree, leaves lowercased like the text.
#   TREES_DIR set: gold trees TREES_DIR/{split}.$SRC.tree (one per raw line, leaves = the
#     Moses tokens, cased) are copied, minus the pairs cleaning dropped.
#   Else stanza parses the cased tokenized source in NUM_SHARDS shards, PARSE_JOBS at a time
#     (mgsa-preprocess --num-shards N --shard-id I), and the shards are checked and merged.
#     A rerun parses only the shards not done yet. SHARD_ID=I parses shard I only (one task
#     of a SLURM array, see README.md); run without it afterwards to merge.
#   Skipped when no system of SYSTEMS reads trees.
set -euo pipefail

DIRECTION=${DIRECTION:-de-en}          # de-en: German source; en-de: English source
SRC=${SRC:-${DIRECTION%-*}}
TGT=${TGT:-${DIRECTION#*-}}
WORKDIR=${WORKDIR:-$PWD/iwslt14_${SRC}_${TGT}}
LOWERCASE=${LOWERCASE:-1}
TREES_DIR=${TREES_DIR:-}
STANZA_DIR=${STANZA_DIR:-$WORKDIR/stanza_resources}
PARSER_LANG=${PARSER_LANG:-$SRC}
PARSER_BATCH_SIZE=${PARSER_BATCH_SIZE:-256}
SHARD_ID=${SHARD_ID:-}      # set: parse only this shard and stop (one SLURM array task, see README.md)
NUM_SHARDS=${NUM_SHARDS:-4}
SYSTEMS=${SYSTEMS:-transformer mgsa_syntactic}   # nothing to parse unless one reads trees (fairseq_mgsa/systems.py)

# shellcheck source=../common/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/steps.sh"
GPUS=${GPUS:-$(num_gpus)}                             # GPUs to parse on (0: CPU)
PARSE_JOBS=${PARSE_JOBS:-$((GPUS > 0 ? GPUS : 1))}    # shards parsed at the same time
if [ -n "$SHARD_ID" ]; then step_parse_shard_only; else exit_unless_trees_needed; run_step 03_parse step_parse; fi
