"""`mgsa-attention`: attention maps of trained checkpoints (MG-SA's Figure 3, and inside each system).

    mgsa-attention DATA --path CKPT [--path CKPT2] --out DIR
                   (--input FILE [--source-input text|trees] | --test-ids 0,3)
                   [--layer L] [--per-head] [--cross-attention] [-s SRC -t TGT] [--stanza-dir DIR]
                   [--gen-subset test] [--bpe-codes CODES] [--batch-size 32]

Each checkpoint is loaded with its own task (fairseq's checkpoint_utils), so sentences reach
it as in fairseq-generate (--test-ids: the binarized test split, phrase files included) or
fairseq-interactive (--input: raw text parsed with stanza, or one bracketed tree per line).
The weights are the models' own: every attention module is asked for them through fairseq's
need_weights / need_head_weights (forward hooks, recorder.py), in one batched forward
per --batch-size sentences. docs/analyses.md shows the figures. For each sentence, in --out:

    <sentence>.npz                  the raw matrices (keys: extract.py), every encoder layer
    <sentence>_self_layer<L>.png    encoder self-attention of layer L, token x token, one panel
                                    per checkpoint (side by side), averaged over heads or --per-head
    <sentence>_m<k>_mgsa_layer<l>.png  inside MG-SA layer l: each head group over its memory
                                    (word heads over tokens, phrase heads over the phrases)
    <sentence>_m<k>_pba_layer<L>.png   phrase-based attention over the n-grams of each size
    <sentence>_m<k>_hysan_layer<L>.png HySAN: every branch
    <sentence>_m<k>_<prefix>_layer<L>.png  another method: the parts its attention keeps
                                    (modules/shared/extra_weights.py), under the prefix it names
    <sentence>_cross.png            decoder cross-attention of the last layer (--cross-attention)
    manifest.json                   files, shapes, checkpoints, the <unk> share of the input, figures
                                    capped in size, and the time each figure took

The package: loading.py (checkpoints, checked against DATA before any model is built), inputs.py
(sentences and batches, the <unk> check), recorder.py (the hooks), extract.py (each model kind's
matrices, the npz keys), plots.py (the figures, capped in size), this file (the command).
"""

import argparse
import json
import logging
import os
import sys
import time
from typing import Dict

import numpy as np
import torch
from tqdm import tqdm

from ...errors import MGSAError
from .extract import record, sentence_arrays
from .inputs import check_unknowns, encoders, input_batch, read_lines, test_split, unknown_counts, unknown_note
from .loading import check_data_dir, load, setup
from .plots import figures

logger = logging.getLogger("mgsa_attention")


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="mgsa-attention", description=__doc__.split("\n\n")[0])
    p.add_argument("data", help="the data directory the checkpoints were trained on (dictionaries, test split)")
    p.add_argument("--path", action="append", required=True,
                   help="checkpoint; twice for two checkpoints side by side (e.g. baseline and MG-SA)")
    p.add_argument("--out", required=True, help="output directory (PNG, npz, manifest.json)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="sentences, one per line (raw text, or one bracketed tree per line)")
    source.add_argument("--test-ids", help="comma-separated sentence ids of the binarized test split, e.g. 0,3")
    p.add_argument("--gen-subset", default="test", help="the split --test-ids index (as fairseq-generate's)")
    p.add_argument("--source-input", choices=["text", "trees"], default="text", help="what --input holds")
    p.add_argument("--layer", type=int, help="encoder layer to plot, 1 = bottom (default: the layer right "
                                             "after the first MG-SA layer, as the paper's Fig. 3; else 2)")
    p.add_argument("--per-head", action="store_true", help="one panel per head instead of the head average")
    p.add_argument("--cross-attention", action="store_true",
                   help="also the decoder's cross-attention over the model's own translation (beam 5)")
    p.add_argument("-s", "--source-lang")
    p.add_argument("-t", "--target-lang")
    p.add_argument("--stanza-dir", help="parser for raw --input text (a directory of mgsa-train-parser)")
    p.add_argument("--bpe-codes", help="subword-nmt codes for --input (default: the checkpoint's --bpe)")
    p.add_argument("--bpe-separator", default="@@")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per forward")
    args = p.parse_args(argv)
    if len(args.path) > 2:
        p.error("--path: at most two checkpoints (side by side)")
    if args.test_ids is not None:
        try:
            args.test_ids = [int(i) for i in args.test_ids.split(",")]
        except ValueError:
            p.error(f"--test-ids {args.test_ids!r}: expected comma-separated integers such as 0,3")
    return args


def default_layer(models) -> int:
    firsts = [min(m.encoder.mgsa_layer_ids) + 1 for m in models if getattr(m.encoder, "mgsa_layer_ids", None)]
    layers = min(len(m.encoder.layers) for m in models)
    return min((min(firsts) + 1) if firsts else 2, layers)


def check_args(args) -> None:
    """What needs no file read: before anything is loaded."""
    if args.batch_size < 1:
        raise MGSAError(f"--batch-size {args.batch_size}: expected a positive number of sentences per forward")
    if not os.path.isdir(args.data):
        raise MGSAError(f"data directory {args.data} not found")
    for path in args.path:
        if not os.path.isfile(path):
            raise MGSAError(f"checkpoint {path} not found (--path)")
    check_data_dir(args.data)  # its dictionaries


def check_layer(layer: int, loaded, paths) -> None:
    for (model, *_), path in zip(loaded, paths):
        if not 1 <= layer <= len(model.encoder.layers):
            raise MGSAError(f"--layer {layer}: {path} has encoder layers 1-{len(model.encoder.layers)} (1 = bottom)")


def batches(loaded, lines, args) -> list:
    """Per checkpoint, its batches of --batch-size sentences and its <unk> share, checked for every
    checkpoint before any forward."""
    sentences = args.test_ids if lines is None else lines
    chunks = [(i, sentences[i:i + args.batch_size]) for i in range(0, len(sentences), args.batch_size)]
    out = []
    for (model, cfg, task, label), path in zip(loaded, args.path):
        if lines is None:
            split = test_split(task, args.test_ids, args.data, args.gen_subset)
            chunk_batches = [split.collater([split[i] for i in chunk]) for _, chunk in chunks]
            subwords, where = None, f"{args.data} ({args.gen_subset} split)"
        else:
            tokenizer, bpe = encoders(task, cfg, args)
            chunk_batches = [input_batch(task, tokenizer, bpe, chunk, first, args.input, args)
                             for first, chunk in chunks]
            subwords, where = bpe is not None, args.input
        counts = [c for batch in chunk_batches for c in unknown_counts(batch, task.source_dictionary)]
        unknowns = check_unknowns(counts, task.source_dictionary, subwords, where, path, args.bpe_separator)
        out.append((chunk_batches, unknowns))
    return out


def run(args) -> dict:
    check_args(args)
    lines = read_lines(args.input, args.source_input) if args.input else None
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    start = time.perf_counter()
    checked = setup(args.path, args)  # every checkpoint read and checked against DATA before any is built
    loaded = []
    for i, path in enumerate(tqdm(args.path, desc="load checkpoints", file=sys.stderr)):
        (state, _, task), checked[i] = checked[i], None  # the state is dropped once its model holds it
        loaded.append(load(path, state, task, args))
        del state
    models, labels = [m for m, *_ in loaded], [l for *_, l in loaded]
    layer = args.layer if args.layer is not None else default_layer(models)
    check_layer(layer, loaded, args.path)
    encoded = batches(loaded, lines, args)
    for _, unknowns in encoded:
        if "warning" in unknowns:
            logger.warning(unknowns["warning"])
    os.makedirs(args.out, exist_ok=True)
    per_sentence: Dict[str, Dict[str, np.ndarray]] = {}
    unk: Dict[str, list] = {}  # per sentence: [<unk>, tokens] of each checkpoint
    progress = tqdm(total=sum(len(b["id"]) for b in encoded[0][0]) * len(loaded), desc="attention weights",
                    unit="sent", file=sys.stderr)
    for k, ((model, cfg, task, label), (chunk_batches, _)) in enumerate(zip(loaded, encoded)):
        for batch in chunk_batches:  # one batched forward per chunk of --batch-size sentences
            recorder, hypotheses = record(task, model, batch, args.cross_attention)
            counts = unknown_counts(batch, task.source_dictionary)
            for b, sample_id in enumerate(batch["id"].tolist()):
                name = f"test{sample_id}" if lines is None else f"line{sample_id + 1}"
                per_sentence.setdefault(name, {}).update(
                    sentence_arrays(task, batch, b, recorder, hypotheses, k))
                unk.setdefault(name, [None] * len(loaded))[k] = counts[b]
            progress.update(len(batch["id"]))
            del recorder, hypotheses
    progress.close()
    weights_seconds = round(time.perf_counter() - start, 3)
    manifest = {"checkpoints": [{"path": p, "label": l, "unk": u}
                                for p, l, (_, u) in zip(args.path, labels, encoded)],
                "layer": layer, "seconds_loading_and_weights": weights_seconds, "sentences": {}}
    order = [f"test{i}" for i in args.test_ids] if lines is None else [f"line{i}" for i in range(1, len(lines) + 1)]
    for name in tqdm(list(dict.fromkeys(order)), desc="figures", file=sys.stderr):
        arrays = per_sentence.pop(name)  # drawn, then dropped: memory holds one sentence's figures
        np.savez(os.path.join(args.out, f"{name}.npz"), **arrays)
        warnings = [n for n in (unknown_note(c, l) for c, l in zip(unk[name], labels)) if n]
        written, capped = figures(name, arrays, labels, layer, args.out, args.per_head, args.cross_attention,
                                  warnings)
        manifest["sentences"][name] = {"npz": f"{name}.npz", "shapes": {k: list(v.shape) for k, v in arrays.items()},
                                       "unk": unk[name], "figures_seconds": written, "figures_capped": capped}
        for filename, seconds in written.items():
            logger.info(f"wrote {os.path.join(args.out, filename)} ({seconds:.2f} s)")
        for filename, note in capped.items():
            logger.warning(f"{os.path.join(args.out, filename)}: {note}")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def main(argv=None):
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO,
                        stream=sys.stderr)
    args = parse_args(argv)
    try:
        run(args)
    except MGSAError as e:
        sys.exit(f"mgsa-attention: error: {e}")


if __name__ == "__main__":
    main()
