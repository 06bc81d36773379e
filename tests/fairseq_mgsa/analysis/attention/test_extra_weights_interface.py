"""A method's attention module is read by mgsa-attention through the one interface of
modules/shared/extra_weights.py alone: a module written here, which implements only that interface,
has its weights recorded and extracted under its own npz keys with nothing in analysis/ naming it;
and no file under analysis/ tests a module against a method's class."""

import re
from argparse import Namespace
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
from fairseq.data import Dictionary

import fairseq_mgsa
from fairseq_mgsa.analysis.attention.extract import sentence_arrays
from fairseq_mgsa.analysis.attention.recorder import AttentionRecorder
from fairseq_mgsa.modules.shared.extra_weights import ExtraAttentionWeights, KeptWeights

C, H = 8, 2


class PairAttention(ExtraAttentionWeights, nn.Module):
    """A made-up method: every head attends over the tokens (part `tokens`) and, on the side,
    over pairs of tokens, phrases of tree level 1 (part `pairs`)."""

    EXTRA_WEIGHTS_PREFIX = "pair"

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(C, C * H)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=False, need_head_weights=False):
        x = query.transpose(0, 1)  # B x T x C
        B, T, _ = x.shape
        q = self.proj(x).view(B, T, H, C).transpose(1, 2)  # B x H x T x C
        scores = q @ x.unsqueeze(1).transpose(2, 3)  # B x H x T x T
        probs = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf")).softmax(-1)
        position = (~key_padding_mask).cumsum(1) - 1  # in the sentence, padding left out
        index = position.div(2, rounding_mode="floor").masked_fill(key_padding_mask, -1)
        member = torch.nn.functional.one_hot(index.clamp(min=0), T).float() * (index >= 0).unsqueeze(-1)
        pairs = probs @ member.unsqueeze(1)  # B x H x T x T(pair slots)
        if self.keeping_extra_weights:
            self.keep_extra((probs, pairs, index))
        out = (probs @ x.unsqueeze(1)).mean(1).transpose(0, 1)
        return out, (probs.transpose(0, 1) if need_head_weights else probs.mean(1)) if need_weights else None

    def extra_parts(self, kept):
        probs, pairs, index = kept
        return [KeptWeights("tokens", probs), KeptWeights("pairs", pairs, phrase_index=index, tree_level=1)]


def test_a_module_with_only_the_interface_is_recorded_and_extracted():
    d = Dictionary()
    for w in ("a", "b", "c", "d", "e"):
        d.add_symbol(w)
    tags = Dictionary()
    for t in ("NP", "VP"):
        tags.add_symbol(t)
    src = torch.tensor([[d.index(w) for w in "abcde"] + [d.eos()],
                        [d.pad(), d.pad()] + [d.index(w) for w in "abc"] + [d.eos()]])
    pad = src.eq(d.pad())
    torch.manual_seed(0)
    attention = PairAttention().eval()
    x = torch.randn(src.size(1), 2, C)
    with torch.no_grad(), AttentionRecorder({"enc1": attention}) as recorder:
        attention(x, x, x, key_padding_mask=pad, need_weights=False)
    assert not attention.keeping_extra_weights and not attention.kept_extra_weights()
    assert [part.name for part in recorder.kept["enc1"]] == ["tokens", "pairs"]

    task = Namespace(source_dictionary=d, tag_dictionary=tags)
    phrase_tags = torch.full((1, 2, 6), tags.index("NP"))  # tree level 1 of each sentence
    phrase_tags[0, 1, 0] = tags.index("VP")
    batch = {"net_input": {"src_tokens": src}, "phrase_tags": phrase_tags}
    arrays = sentence_arrays(task, batch, 1, recorder, None, 0)  # the left-padded sentence
    real = torch.arange(2, 6)
    attention.keep_extra_weights(True)  # the same forward again, outside the recorder
    with torch.no_grad():
        attention(x, x, x, key_padding_mask=pad)
    probs, pairs = [part.probs for part in attention.kept_extra_weights()]
    assert list(arrays["m0_tokens"]) == ["a", "b", "c", "</s>"]
    np.testing.assert_array_equal(arrays["m0_enc1"], recorder.weights["enc1"][:, 1][:, real][:, :, real].numpy())
    np.testing.assert_array_equal(arrays["m0_pair1_tokens"], probs[1][:, real][:, :, real].numpy())
    # its tokens (2..5) are its pairs 0 and 1: spans over the sentence's own tokens, the level-1
    # tags (the last phrase is the end of sentence's)
    np.testing.assert_array_equal(arrays["m0_pair1_pairs_spans"], [[0, 2], [2, 4]])
    np.testing.assert_array_equal(arrays["m0_pair1_pairs"], pairs[1][:, real][:, :, :2].numpy())
    assert list(arrays["m0_pair1_pairs_tags"]) == ["VP", "</s>"]
    assert "m0_pair1_groups" not in arrays  # LISTS_EXTRA_WEIGHTS off


def test_analysis_knows_no_method_class():
    analysis = Path(fairseq_mgsa.__file__).parent / "analysis"
    methods = ("MultiGranularitySelfAttention", "PhraseBasedAttention", "HybridMultiheadAttention",
               "RelativeMultiheadAttention", "RelativeHybridMultiheadAttention")
    for path in analysis.rglob("*.py"):
        text = path.read_text()
        assert not [m for m in methods if re.search(rf"\b{m}\b", text)], path
