"""`mgsa-attention`: attention maps of trained checkpoints (MG-SA's Figure 3, and inside each system).

    mgsa-attention DATA --path CKPT [--path CKPT2] --out DIR
                   (--input FILE [--source-input text|trees] | --test-ids 0,3)
                   [--layer L] [--per-head] [--cross-attention] [-s SRC -t TGT] [--stanza-dir DIR]
                   [--gen-subset test] [--bpe-codes CODES] [--batch-size 32]

Each checkpoint is loaded with its own task (fairseq's checkpoint_utils), so sentences reach
it as in fairseq-generate (--test-ids: the binarized test split, phrase files included) or
fairseq-interactive (--input: raw text parsed with stanza, or one bracketed tree per line).
The weights are the models' own: every attention module is asked for them through fairseq's
need_weights / need_head_weights (forward hooks, `AttentionRecorder`), in one batched forward
per --batch-size sentences. docs/analyses.md shows the figures. For each sentence, in --out:

    <sentence>.npz                  the raw matrices (key list below), every encoder layer
    <sentence>_self_layer<L>.png    encoder self-attention of layer L, token x token, one panel
                                    per checkpoint (side by side), averaged over heads or --per-head
    <sentence>_m<k>_mgsa_layer<l>.png  inside MG-SA layer l: each head group over its memory
                                    (word heads over tokens, phrase heads over the phrases)
    <sentence>_m<k>_pba_layer<L>.png   phrase-based attention over the n-grams of each size
    <sentence>_m<k>_hysan_layer<L>.png HySAN: every branch
    <sentence>_cross.png            decoder cross-attention of the last layer (--cross-attention)
    manifest.json                   files, shapes, checkpoints and the time each figure took

npz keys, k = checkpoint (0, 1), l = encoder layer (1 = bottom): m<k>_tokens; m<k>_enc<l>
(H x T x T, token level: an MG-SA or PBA layer's phrase weights shared evenly by the phrase's
tokens); m<k>_mgsa<l>_groups (head groups in head order) and m<k>_mgsa<l>_<group> (word heads
h x T x T, phrase heads h x T x P) with _spans (P x 2, token [start, end)) and _tags;
m<k>_pba<l>_ngram<n> (h x T x T, key s = the n-gram ending at token s); m<k>_hysan<l>_<branch>;
m<k>_target_tokens and m<k>_cross<l> (H x U x T) with --cross-attention.
"""

import argparse
import json
import logging
import os
import sys
import time
from argparse import Namespace
from functools import partial
from typing import Dict, List

import numpy as np
import torch
import torch.nn as nn
from fairseq import checkpoint_utils
from fairseq.data import data_utils
from fairseq.modules import MultiheadAttention
from tqdm import tqdm

from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.trees import parse_tree

from .. import checkpoint_loading  # noqa: F401  (torch.load allow-list for fairseq checkpoints)
from ..data.inference_phrases import PhraseAnnotator
from ..errors import MGSAError
from ..modules.hybrid_attention import HybridMultiheadAttention
from ..modules.multi_granularity_attention import MultiGranularitySelfAttention
from ..modules.phrase_based_attention import HOMOGENEOUS, PhraseBasedAttention
from .attention_plots import figures

logger = logging.getLogger("mgsa_attention")


class AttentionRecorder:
    """Within `with`, every module of `modules` (name -> attention module) is called with
    need_weights=True, need_head_weights=True and its weights are kept in `weights[name]`
    (H x B x T x S); PBA's per-n-gram and HySAN's per-branch probabilities in `extra[name]`.

    fairseq's MultiheadAttention averages over heads on its fast path
    (F.multi_head_attention_forward) whatever need_head_weights says: its own flag
    skip_embed_dim_check sends it down its regular path, which returns them per head."""

    FLAGS = {MultiheadAttention: "skip_embed_dim_check", PhraseBasedAttention: "keep_ngram_weights",
             HybridMultiheadAttention: "keep_branch_weights"}

    def __init__(self, modules: Dict[str, nn.Module]):
        self.modules = modules
        self.weights: Dict[str, torch.Tensor] = {}
        self.extra: Dict[str, List[torch.Tensor]] = {}

    def __enter__(self):
        self.handles, self.restore = [], []
        for name, module in self.modules.items():
            self.handles.append(module.register_forward_pre_hook(self.ask_for_weights, with_kwargs=True))
            self.handles.append(module.register_forward_hook(partial(self.keep, name)))
            for cls, flag in self.FLAGS.items():
                if isinstance(module, cls):
                    self.restore.append((module, flag, getattr(module, flag, None)))
                    setattr(module, flag, True)
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        for module, flag, value in self.restore:
            setattr(module, flag, value if value is not None else False)
            for attr in ("ngram_weights", "branch_weights"):
                if hasattr(module, attr):
                    delattr(module, attr)

    @staticmethod
    def ask_for_weights(module, args, kwargs):
        return args, dict(kwargs, need_weights=True, need_head_weights=True)

    def keep(self, name, module, args, output):
        if isinstance(module, MultiGranularitySelfAttention):
            out, composed, weights = output  # the third output only when asked for weights
            self.weights[name] = weights.detach()
            return out, composed
        self.weights[name] = output[1].detach()
        if isinstance(module, PhraseBasedAttention):
            self.extra[name] = [p.detach() for p in module.ngram_weights]
        elif isinstance(module, HybridMultiheadAttention):
            H = module.num_heads
            self.extra[name] = [p.detach().view(-1, H, *p.shape[1:]) for p in module.branch_weights]
        return output


# ---- models and sentences ----------------------------------------------------------------

def load(path: str, args):
    if not os.path.isfile(path):
        raise MGSAError(f"checkpoint {path} not found (--path)")
    overrides = {"data": args.data, "source_input": args.source_input}
    if args.stanza_dir:
        overrides["stanza_dir"] = args.stanza_dir
    if args.source_lang:
        overrides["source_lang"] = args.source_lang
    if args.target_lang:
        overrides["target_lang"] = args.target_lang
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
    model = models[0].eval()
    arch = getattr(cfg.model, "arch", None) or getattr(cfg.model, "_name", "model")
    label = f"{arch} ({os.path.basename(os.path.dirname(os.path.abspath(path))) or path})"
    return model, cfg, task, label


def test_split(task, ids: List[int], data: str, split: str = "test"):
    """The binarized split, with every id of --test-ids checked against its size."""
    try:
        task.load_dataset(split)
    except FileNotFoundError as e:
        raise MGSAError(f"{data}: no {split!r} split to take --test-ids from ({e})")
    dataset = task.dataset(split)
    bad = [i for i in ids if not 0 <= i < len(dataset)]
    if bad:
        where = os.path.join(data, f"{split}.{task.cfg.source_lang}-{task.cfg.target_lang}.{task.cfg.source_lang}")
        raise MGSAError(f"--test-ids {bad[0]}: {where} has {len(dataset)} sentences (ids 0-{len(dataset) - 1})")
    return dataset


def read_lines(path: str, source_input: str) -> List[str]:
    if not os.path.isfile(path):
        raise MGSAError(f"input file {path} not found (--input)")
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    for i, line in enumerate(lines, 1):
        if not line.strip():
            raise MGSAError(f"{path}, line {i}: empty line, expected one sentence (or one tree) per line")
    if not lines:
        raise MGSAError(f"{path} is empty: expected one sentence (or one tree) per line")
    if source_input == "trees":  # every line one whole tree, checked before any model is loaded
        for i, line in enumerate(lines, 1):
            try:
                parse_tree(line, path, i)
            except PreprocessError as e:
                raise MGSAError(f"{e} (--source-input trees: one bracketed tree per line)")
    return lines


def input_batch(task, cfg, lines: List[str], first: int, path: str, args):
    """The batch fairseq-interactive would decode for `lines` (from line `first` of the
    file, 0-based), phrases included (the task's own path)."""
    tokenizer = task.build_tokenizer(cfg.tokenizer)
    bpe = task.build_bpe(Namespace(bpe="subword_nmt", bpe_codes=args.bpe_codes, bpe_separator=args.bpe_separator)
                         if args.bpe_codes else cfg.bpe)
    try:
        if getattr(task, "required_levels", 0):  # MG-SA with tree levels: the task parses / reads trees
            tokens, lengths = task.get_interactive_tokens_and_lengths(lines, None)
        elif args.source_input == "trees":  # a model without phrases: the trees' words, as the task reads them
            tokens = PhraseAnnotator(task.source_dictionary, None, 0, "trees", tokenizer=None,
                                     bpe=bpe)(lines, first + 1)[0]
            lengths = [t.numel() for t in tokens]
        else:
            def encode(line):
                line = tokenizer.encode(line) if tokenizer is not None else line
                return bpe.encode(line) if bpe is not None else line
            tokens, lengths = task.get_interactive_tokens_and_lengths(lines, encode)
    except MGSAError as e:
        raise MGSAError(f"{path}: {e}")
    dataset = task.build_dataset_for_inference(tokens, lengths)
    batch = dataset.collater([dataset[i] for i in range(len(lines))])
    batch["id"] = batch["id"] + first  # line numbers in the file
    return batch


def translate(task, model, batch) -> List[torch.Tensor]:
    """The model's own translation of every sentence of the batch (beam 5), in batch order."""
    generator = task.build_generator([model], Namespace(beam=5))
    hypos = task.inference_step(generator, [model], batch)
    return [h[0]["tokens"] for h in hypos]


# ---- one checkpoint: weights of every sentence ---------------------------------------------

def attention_modules(model, cross: bool) -> Dict[str, nn.Module]:
    modules = {f"enc{i}": layer.self_attn for i, layer in enumerate(model.encoder.layers, 1)}
    if cross:
        modules.update({f"cross{i}": layer.encoder_attn for i, layer in enumerate(model.decoder.layers, 1)})
    return modules


def record(task, model, batch, cross: bool):
    """One forward of the whole batch under the recorder. Returns (recorder, partitions,
    hypotheses or None)."""
    net_input = {k: v for k, v in batch["net_input"].items() if k != "prev_output_tokens"}
    hypotheses = None
    with torch.no_grad():
        if cross:
            hypotheses = translate(task, model, batch)
            d = task.target_dictionary
            prev = data_utils.collate_tokens(hypotheses, d.pad(), d.eos(), left_pad=False,
                                             move_eos_to_beginning=True)
        with AttentionRecorder(attention_modules(model, cross)) as recorder:
            if cross:
                model(**net_input, prev_output_tokens=prev)
            else:
                model.encoder(**net_input)
        partitions = {}
        if hasattr(model.encoder, "build_partitions"):  # MG-SA: the partitions the model itself builds
            partitions = model.encoder.build_partitions(net_input["src_tokens"].eq(task.source_dictionary.pad()),
                                                        net_input.get("src_phrase_lengths"),
                                                        net_input.get("src_phrase_counts"))
    return recorder, partitions, hypotheses


def phrase_spans(index: torch.Tensor) -> np.ndarray:
    """P x 2 token [start, end) of each phrase, from the phrase index of a sentence's tokens."""
    ids = index.tolist()
    return np.array([[ids.index(m), len(ids) - ids[::-1].index(m)] for m in range(max(ids) + 1)], dtype=np.int64)


def sentence_arrays(task, model, batch, b: int, recorder, partitions, hypotheses, k: int) -> Dict[str, np.ndarray]:
    """The matrices of sentence b of the batch, padding removed, under keys m<k>_..."""
    src = batch["net_input"]["src_tokens"]
    real = src[b].ne(task.source_dictionary.pad()).nonzero().squeeze(1)  # its token positions
    n = real.numel()
    tokens = [task.source_dictionary[t] for t in src[b, real].tolist()]
    out = {f"m{k}_tokens": np.array(tokens)}
    keep = lambda w: w[:, b].index_select(1, real).index_select(2, real).float().numpy()  # noqa: E731
    for name, w in recorder.weights.items():
        if not name.startswith("enc"):
            continue
        layer = int(name[3:])
        module = recorder.modules[name]
        if isinstance(module, MultiGranularitySelfAttention):
            out[f"m{k}_enc{layer}"] = keep(module.token_weights(w.transpose(0, 1), partitions).transpose(0, 1))
            h = module.heads_per_granularity
            groups = []  # npz key suffix of each head group, in head order
            for g_i, g in enumerate(module.granularities):
                heads = w[g_i * h:(g_i + 1) * h, b].index_select(1, real)  # h x T x slots
                key = f"m{k}_mgsa{layer}_{g}" + (f"_{g_i}" if module.granularities.count(g) > 1 else "")
                groups.append(key[len(f"m{k}_mgsa{layer}_"):])
                if g == "word":
                    out[key] = heads.index_select(2, real).float().numpy()
                    continue
                spans = phrase_spans(partitions[g].phrase_index[b, real])
                out[key] = heads[:, :, :len(spans)].float().numpy()
                out[key + "_spans"] = spans
                out[key + "_tags"] = np.array(phrase_tags(task, batch, g, b, len(spans)))
            out[f"m{k}_mgsa{layer}_groups"] = np.array(groups)
        else:
            out[f"m{k}_enc{layer}"] = keep(w)
        if isinstance(module, PhraseBasedAttention):
            sizes = ([[n_] for n_, _ in module.groups] if module.mode == HOMOGENEOUS else [list(module.ngrams)])
            for size_list, p in zip(sizes, recorder.extra[name]):
                S = p.size(-1) // len(size_list)
                for i, size in enumerate(size_list):
                    block = p[b, :, :, i * S:(i + 1) * S].index_select(1, real).index_select(2, real)
                    out[f"m{k}_pba{layer}_ngram{size}"] = block.float().numpy()
        if isinstance(module, HybridMultiheadAttention):
            for branch, p in zip(module.branches, recorder.extra[name]):
                out[f"m{k}_hysan{layer}_{branch.name}"] = p[b].index_select(1, real).index_select(2, real).float().numpy()
    if hypotheses is not None:
        hyp = hypotheses[b]
        out[f"m{k}_target_tokens"] = np.array([task.target_dictionary[t] for t in hyp.tolist()])
        for name, w in recorder.weights.items():
            if name.startswith("cross"):
                out[f"m{k}_{name}"] = w[:, b, :hyp.numel()].index_select(2, real).float().numpy()
    assert out[f"m{k}_tokens"].shape == (n,)
    return out


def phrase_tags(task, batch, granularity: str, b: int, count: int) -> List[str]:
    """Tag of each phrase of a syntactic granularity (synK: tree level K), from the batch's
    phrase_tags; n-gram phrases have none. The last phrase is the end-of-sentence token's."""
    tags = batch.get("phrase_tags")
    tag_dict = getattr(task, "tag_dictionary", None)
    if not granularity.startswith("syn") or tags is None:
        return ["" for _ in range(count - 1)] + ["</s>"]
    level = int(granularity[3:])
    ids = tags[level - 1, b, :count - 1].tolist()
    return [tag_dict[t] if tag_dict is not None else str(t) for t in ids] + ["</s>"]


# ---- command ----------------------------------------------------------------------------

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
    p.add_argument("--layer", type=int, help="encoder layer to plot (1 = bottom; default: the layer right "
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


def run(args) -> dict:
    if not os.path.isdir(args.data):
        raise MGSAError(f"data directory {args.data} not found")
    for path in args.path:  # before any loading
        if not os.path.isfile(path):
            raise MGSAError(f"checkpoint {path} not found (--path)")
    lines = read_lines(args.input, args.source_input) if args.input else None
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    start = time.perf_counter()
    loaded = [load(path, args) for path in tqdm(args.path, desc="load checkpoints", file=sys.stderr)]
    models, labels = [m for m, *_ in loaded], [l for *_, l in loaded]
    layer = args.layer or default_layer(models)
    for (model, _, _, label), path in zip(loaded, args.path):
        if not 1 <= layer <= len(model.encoder.layers):
            raise MGSAError(f"--layer {layer}: {path} has encoder layers 1-{len(model.encoder.layers)}")
    os.makedirs(args.out, exist_ok=True)
    per_sentence: Dict[str, Dict[str, np.ndarray]] = {}
    sentences = args.test_ids if lines is None else lines
    chunks = [(i, sentences[i:i + args.batch_size]) for i in range(0, len(sentences), args.batch_size)]
    progress = tqdm(total=len(loaded) * len(sentences), desc="attention weights", unit="sent", file=sys.stderr)
    splits = [test_split(task, args.test_ids, args.data, args.gen_subset) for _, _, task, _ in loaded] \
        if lines is None else None
    for k, (model, cfg, task, label) in enumerate(loaded):
        for first, chunk in chunks:  # one batched forward per chunk of --batch-size sentences
            batch = (splits[k].collater([splits[k][i] for i in chunk]) if lines is None else
                     input_batch(task, cfg, chunk, first, args.input, args))
            recorder, partitions, hypotheses = record(task, model, batch, args.cross_attention)
            for b, sample_id in enumerate(batch["id"].tolist()):
                name = f"test{sample_id}" if lines is None else f"line{sample_id + 1}"
                per_sentence.setdefault(name, {}).update(
                    sentence_arrays(task, model, batch, b, recorder, partitions, hypotheses, k))
            progress.update(len(chunk))
    progress.close()
    weights_seconds = round(time.perf_counter() - start, 3)
    manifest = {"checkpoints": [{"path": p, "label": l} for p, l in zip(args.path, labels)], "layer": layer,
                "seconds_loading_and_weights": weights_seconds, "sentences": {}}
    order = [f"test{i}" for i in args.test_ids] if lines is None else [f"line{i}" for i in range(1, len(lines) + 1)]
    for name in tqdm(list(dict.fromkeys(order)), desc="figures", file=sys.stderr):
        arrays = per_sentence[name]
        np.savez(os.path.join(args.out, f"{name}.npz"), **arrays)
        written = figures(name, arrays, labels, layer, args.out, args.per_head, args.cross_attention)
        manifest["sentences"][name] = {"npz": f"{name}.npz", "shapes": {k: list(v.shape) for k, v in arrays.items()},
                                       "figures_seconds": written}
        for filename, seconds in written.items():
            logger.info(f"wrote {os.path.join(args.out, filename)} ({seconds:.2f} s)")
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
