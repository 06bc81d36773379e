"""The matrices of one checkpoint for a batch of sentences: one recorded forward, then per
sentence its padding removed and each model kind's own view under the npz keys of
docs/analyses.md (k = checkpoint, l = encoder layer, 1 = bottom): m<k>_tokens; m<k>_enc<l>
(H x T x T, token level: an MG-SA or PBA layer's phrase weights shared evenly by the phrase's
tokens); m<k>_mgsa<l>_groups (head groups in head order) and m<k>_mgsa<l>_<group> (word heads
h x T x T, phrase heads h x T x P) with _spans (P x 2, token [start, end)) and _tags;
m<k>_pba<l>_ngram<n> (h x T x T, key s = the n-gram ending at token s); m<k>_hysan<l>_<branch>;
m<k>_target_tokens and m<k>_cross<l> (H x U x T) with --cross-attention."""

from argparse import Namespace
from typing import Dict, List

import numpy as np
import torch
import torch.nn as nn
from fairseq.data import data_utils

from ...modules.mgsa.granularities import SYNTACTIC, WORD, Granularity
from ...modules.hysan.attention import HybridMultiheadAttention
from ...modules.mgsa.attention import MultiGranularitySelfAttention
from ...modules.pba.attention import HOMOGENEOUS, PhraseBasedAttention
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
                if g.kind == WORD:
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


def phrase_tags(task, batch, granularity: Granularity, b: int, count: int) -> List[str]:
    """Tag of each phrase of a syntactic granularity (synK: tree level K), from the batch's
    phrase_tags; n-gram phrases have none. The last phrase is the end-of-sentence token's."""
    tags = batch.get("phrase_tags")
    tag_dict = getattr(task, "tag_dictionary", None)
    if granularity.kind != SYNTACTIC or tags is None:
        return ["" for _ in range(count - 1)] + ["</s>"]
    ids = tags[granularity.size - 1, b, :count - 1].tolist()
    return [tag_dict[t] if tag_dict is not None else str(t) for t in ids] + ["</s>"]
