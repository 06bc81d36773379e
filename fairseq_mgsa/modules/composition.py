"""Phrase composition COM(p_m) -> g_m: one vector per phrase from its tokens.

All three strategies of the paper work on the flat token axis with scatter
operations keyed by the partition (no padding to the longest phrase, no Python loop
over sentences or phrases):

    x      N x C   tokens of the batch, N = B * T
    index  N       global phrase slot of each token (b * P + phrase), padding -> B * P
    out    S x C   S = B * P + 1 slots; the last one collects padding and is dropped
"""

import math

import torch
import torch.nn as nn
from torch import Tensor

from ..errors import MGSAError
from torch.nn.utils.rnn import PackedSequence


def segment_max(x: Tensor, index: Tensor, num_slots: int) -> Tensor:
    """Per-slot max over the rows of x (empty slots are 0)."""
    out = x.new_zeros(num_slots, *x.shape[1:])
    idx = index.view(-1, *([1] * (x.dim() - 1))).expand_as(x)
    return out.scatter_reduce(0, idx, x, reduce="amax", include_self=False)


def segment_sum(x: Tensor, index: Tensor, num_slots: int) -> Tensor:
    out = x.new_zeros(num_slots, *x.shape[1:])
    return out.index_add(0, index, x)


def segment_softmax(scores: Tensor, index: Tensor, num_slots: int) -> Tensor:
    """Softmax of N scores within each slot."""
    shifted = scores - segment_max(scores, index, num_slots).detach()[index]
    e = shifted.exp()
    return e / segment_sum(e, index, num_slots)[index]


class MaxPoolComposition(nn.Module):
    """The paper's CNN composition: max-pooling over the phrase's tokens, no parameters."""

    def forward(self, x: Tensor, index: Tensor, num_slots: int) -> Tensor:
        return segment_max(x, index, num_slots)


class SANComposition(nn.Module):
    """The max-pooled phrase vector queries an attention over the phrase's own tokens.

    Queries and keys are projected to `dim` (the width of the granularity's heads);
    values are the tokens themselves, so g_m stays in the model's space.
    """

    def __init__(self, embed_dim: int, dim: int):
        super().__init__()
        self.q_proj = nn.Linear(embed_dim, dim)
        self.k_proj = nn.Linear(embed_dim, dim)
        self.scaling = dim ** -0.5

    def forward(self, x: Tensor, index: Tensor, num_slots: int) -> Tensor:
        q = self.q_proj(segment_max(x, index, num_slots)) * self.scaling  # S x D
        k = self.k_proj(x)  # N x D
        scores = (q[index] * k).sum(dim=-1)  # N: each token against its own phrase's query
        weights = segment_softmax(scores, index, num_slots)
        return segment_sum(weights.unsqueeze(-1) * x, index, num_slots)


class LSTMComposition(nn.Module):
    """Last hidden state of an LSTM run over each phrase's tokens, mapped back to the model's width.

    The phrases of the batch are packed directly into a PackedSequence (time-major,
    longest phrase first), so the fused LSTM kernel runs over all phrases at once
    without padding them to the longest phrase.
    """

    def __init__(self, embed_dim: int, dim: int):
        super().__init__()
        self.lstm = nn.LSTM(embed_dim, dim)
        self.out_proj = nn.Linear(dim, embed_dim)

    def forward(self, x: Tensor, index: Tensor, num_slots: int) -> Tensor:
        real = index < num_slots - 1
        tok, slot = x[real], index[real]
        # offset of each token inside its phrase: tokens of a phrase are contiguous and in order
        order = torch.argsort(slot, stable=True)
        tok, slot = tok[order], slot[order]
        phrase_ids, lengths = torch.unique_consecutive(slot, return_counts=True)
        starts = lengths.cumsum(0) - lengths
        offset = torch.arange(len(slot), device=x.device) - starts.repeat_interleave(lengths)
        # rank phrases longest first; PackedSequence wants time-major data in that order
        sorted_lengths, sorted_indices = torch.sort(lengths, descending=True, stable=True)
        rank = torch.empty_like(sorted_indices)
        rank[sorted_indices] = torch.arange(len(rank), device=x.device)
        tok_rank = rank.repeat_interleave(lengths)
        packed_order = torch.argsort(offset * len(rank) + tok_rank)
        batch_sizes = torch.bincount(offset, minlength=int(sorted_lengths[0])).cpu()
        packed = PackedSequence(tok[packed_order], batch_sizes, sorted_indices, rank)
        _, (h, _) = self.lstm(packed)  # h: 1 x num_phrases x D, back in phrase_ids order
        out = x.new_zeros(num_slots, self.out_proj.out_features)
        return out.index_copy(0, phrase_ids, self.out_proj(h[0]))


def build_composition(name: str, embed_dim: int, dim: int) -> nn.Module:
    if name == "max":
        return MaxPoolComposition()
    if name == "san":
        return SANComposition(embed_dim, dim)
    if name == "lstm":
        return LSTMComposition(embed_dim, dim)
    raise MGSAError(f"unknown phrase composition {name!r}: expected one of max, lstm, san")
