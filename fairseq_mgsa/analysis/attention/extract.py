"""The matrices of one checkpoint for a batch of sentences: one recorded forward, then per
sentence its padding removed and each model kind's own view under the npz keys of
docs/analyses.md (k = checkpoint, l = encoder layer, 1 = bottom): m<k>_tokens; m<k>_enc<l>
(H x T x T, token level: an MG-SA or PBA layer's phrase weights shared evenly by the phrase's
tokens); m<k>_mgsa<l>_groups (head groups in head order) and m<k>_mgsa<l>_<group> (word heads
h x T x T, phrase heads h x T x P) with _spans (P x 2, token [start, end)) and _tags;
m<k>_pba<l>_ngram<n> (h x T x T, key s = the n-gram ending at token s); m<k>_hysan<l>_<branch>;
m<k>_target_tokens and m<k>_cross<l> (H x U x T) with --cross-attention.

The keys under a method's name are the parts its attention module keeps (modules/shared/extra_weights.py,
the one interface every method's module implements): nothing here knows a method."""

from argparse import Namespace
from typing import Dict, List

import numpy as np
import torch
import torch.nn as nn
from fairseq.data import data_utils

from ...modules.shared.extra_weights import KeptWeights
from .recorder import AttentionRecorder


def translate(task, model, batch) -> List[torch.Tensor]:
    """The model's own translation of every sentence of the batch (beam 5), in batch order."""
    generator = task.build_generator([model], Namespace(beam=5))
    hypos = task.inference_step(generator, [model], batch)
    return [h[0]["tokens"] for h in hypos]


def attention_modules(model, cross: bool) -> Dict[str, nn.Module]:
    modules = {f"enc{i}": layer.self_attn for i, layer in enumerate(model.encoder.layers, 1)}
    if cross:
        modules.update({f"cross{i}": layer.encoder_attn for i, layer in enumerate(model.decoder.layers, 1)})
    return modules


def record(task, model, batch, cross: bool):
    """One forward of the whole batch under the recorder. Returns (recorder, hypotheses or None)."""
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
    return recorder, hypotheses


def phrase_spans(index: torch.Tensor) -> np.ndarray:
    """P x 2 token [start, end) of each phrase, from the phrase index of a sentence's tokens."""
    ids = index.tolist()
    return np.array([[ids.index(m), len(ids) - ids[::-1].index(m)] for m in range(max(ids) + 1)], dtype=np.int64)


def sentence_arrays(task, batch, b: int, recorder, hypotheses, k: int) -> Dict[str, np.ndarray]:
    """The matrices of sentence b of the batch, padding removed, under keys m<k>_..."""
    src = batch["net_input"]["src_tokens"]
    real = src[b].ne(task.source_dictionary.pad()).nonzero().squeeze(1)  # its token positions
    n = real.numel()
    tokens = [task.source_dictionary[t] for t in src[b, real].tolist()]
    out = {f"m{k}_tokens": np.array(tokens)}
    keep = lambda w: w[:, b].index_select(1, real).index_select(2, real).float().numpy()  # noqa: E731
    for name in recorder.weights:
        if not name.startswith("enc"):
            continue
        layer = int(name[3:])
        module = recorder.modules[name]
        out[f"m{k}_enc{layer}"] = keep(recorder.token_weights[name])
        if name in recorder.kept:
            prefix = f"m{k}_{module.EXTRA_WEIGHTS_PREFIX}{layer}_"
            for part in recorder.kept[name]:
                out.update(part_arrays(task, batch, b, real, part, prefix + part.name))
            if module.LISTS_EXTRA_WEIGHTS:  # the parts in head order
                out[prefix + "groups"] = np.array([part.name for part in recorder.kept[name]])
    if hypotheses is not None:
        hyp = hypotheses[b]
        out[f"m{k}_target_tokens"] = np.array([task.target_dictionary[t] for t in hyp.tolist()])
        for name, w in recorder.weights.items():
            if name.startswith("cross"):
                out[f"m{k}_{name}"] = w[:, b, :hyp.numel()].index_select(2, real).float().numpy()
    assert out[f"m{k}_tokens"].shape == (n,)
    return out


def part_arrays(task, batch, b: int, real: torch.Tensor, part: KeptWeights, key: str) -> Dict[str, np.ndarray]:
    """A kept part of sentence b (modules/shared/extra_weights.py): h x T x T over tokens, or h x T x P
    over its phrases with their spans (P x 2) and tags."""
    heads = part.probs[b].index_select(1, real)  # h x T x K
    if part.phrase_index is None:
        return {key: heads.index_select(2, real).float().numpy()}
    spans = phrase_spans(part.phrase_index[b, real])
    return {key: heads[:, :, :len(spans)].float().numpy(), key + "_spans": spans,
            key + "_tags": np.array(phrase_tags(task, batch, part.tree_level, b, len(spans)))}


def phrase_tags(task, batch, tree_level: int, b: int, count: int) -> List[str]:
    """Tag of each phrase of tree level `tree_level` (synK: level K), from the batch's phrase_tags;
    other phrases (tree_level 0: n-grams) have none. The last phrase is the end-of-sentence token's."""
    tags = batch.get("phrase_tags")
    tag_dict = getattr(task, "tag_dictionary", None)
    if not tree_level or tags is None:
        return ["" for _ in range(count - 1)] + ["</s>"]
    ids = tags[tree_level - 1, b, :count - 1].tolist()
    return [tag_dict[t] if tag_dict is not None else str(t) for t in ids] + ["</s>"]
