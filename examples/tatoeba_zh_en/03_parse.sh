#!/usr/bin/env bash
# Step 3: constituency trees of the segmented Chinese -> WORKDIR/tok/{split}.zh.tree, one per line.
#   The parser in PARSER_DIR (a model mgsa-train-parser wrote: trained on NLTK's Sinica sample,
#   its words made Simplified; README.md says how), read by mgsa-preprocess --parser stanza on the
#   words of step 2 (pretokenized: the trees' leaves are those words), one thread.
#   TREES_DIR set: gold trees TREES_DIR/{split}.zh.tree instead, no parser.
#   Skipped when no system of SYSTEMS reads trees.
set -euo pipefail
# shellcheck source=defaults.sh
source "$(dirname "${BASH_SOURCE[0]}")/defaults.sh"
GPUS=${GPUS:-$(num_gpus)}
PARSE_JOBS=${PARSE_JOBS:-$((GPUS > 0 ? GPUS : 1))}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

exit_unless_trees_needed
if [ -z "$TREES_DIR" ]; then
  [ -f "$PARSER_DIR/mgsa_parser.json" ] \
    || die "no Chinese parser in $PARSER_DIR (its mgsa_parser.json): train one on NLTK's Sinica sample (examples/tatoeba_zh_en/README.md, 'The parser') and give it with PARSER_DIR=<its folder>, or give gold trees with TREES_DIR"
  STANZA_DIR=$PARSER_DIR
fi
if [ -n "$SHARD_ID" ]; then step_parse_shard_only; else run_parse; fi
