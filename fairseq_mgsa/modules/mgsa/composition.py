"""Phrase composition COM(p_m) -> g_m: one vector per phrase from its tokens.

One module composes the phrases of every granularity of a layer, each granularity with
its own weights (stacked along a leading granularity axis). The strategies work on the
flat token axis with scatter operations keyed by the partitions (no padding to the
longest phrase, no Python loop over sentences or phrases). Two layouts, same arithmetic:

`forward` composes one granularity (its weights selected by `granularity`), over its own
phrase count P_g:

    x      N x C   tokens of the batch, N = B * T (shared by all granularities)
    index  N       slot of each token (b * P_g + phrase), padding -> S - 1
    out    S x C   S = B * P_g + 1 slots; the last collects padding

`forward_all` composes every granularity in one set of operations over the largest phrase
count P, from the partitions themselves:

    x             B x T x C
    phrase_index  Gr x B x T       phrase of each token in each granularity, -1 at padding
    out           Gr x B x P x C   slots past a sentence's phrases are 0

The max-pooling and LSTM compositions copy the tokens once per granularity onto one flat
slot axis (`token_slots`, `flat_slots`); the SAN composition attends with one fused
attention call over a phrase-membership mask instead (san_attention.py).

On a GPU, which is launch-bound here, `forward_all` launches a third as many kernels for
three granularities. On a CPU it is the slower one: its Gr * N x C tensors are large enough
that glibc returns them to the system when freed and page-faults them in on the next
allocation (1.9x the per-granularity calls' time at batch 64,
python -m benchmarks.profile_layers mgsa); the SAN composition's attention call is no faster there
(91 ms forward and backward at base width, batch 64, one thread, against 87 for its segment
arithmetic and 57 granularity by granularity). PhraseMemory picks by device.
"""

import math
from typing import Tuple

import torch
import torch.nn as nn
from torch import Tensor
from torch.nn.utils.rnn import PackedSequence

from ...errors import MGSAError
from .san_attention import san_attention, san_attention_ref
from .segments import flat_slots, phrases_of_slots, segment_max, segment_softmax, segment_sum, token_slots, \
    tokens_per_granularity


class MaxPoolComposition(nn.Module):
    """The paper's CNN composition: max-pooling over the phrase's tokens, no parameters."""

    def forward(self, x: Tensor, index: Tensor, num_slots: int, granularity: int = 0) -> Tensor:
        return segment_max(x, index, num_slots)

    def forward_all(self, x: Tensor, phrase_index: Tensor, P: int) -> Tensor:
        B, T, C = x.shape
        G = phrase_index.size(0)
        index, S = token_slots(phrase_index, P)
        out = segment_max(tokens_per_granularity(x.reshape(B * T, C), G), flat_slots(index, S), G * S)
        return phrases_of_slots(out.view(G, S, C), B, P)


class SANComposition(nn.Module):
    """The max-pooled phrase vector queries an attention over the phrase's own tokens.

    Queries and keys are projected to `dim` (the width of the granularity's heads);
    values are the tokens themselves, so g_m stays in the model's space. One (W_q, W_k)
    pair per granularity. use_fast_path=False: forward_all in the segment arithmetic
    (san_attention_ref) instead of the fused attention call.
    """

    def __init__(self, num_granularities: int, embed_dim: int, dim: int, use_fast_path: bool = True):
        super().__init__()
        self.use_fast_path = use_fast_path
        G = num_granularities
        self.q_weight = nn.Parameter(torch.empty(G, dim, embed_dim))
        self.q_bias = nn.Parameter(torch.empty(G, dim))
        self.k_weight = nn.Parameter(torch.empty(G, dim, embed_dim))
        self.k_bias = nn.Parameter(torch.empty(G, dim))
        self.scaling = dim ** -0.5
        bound = 1 / math.sqrt(embed_dim)  # as the nn.Linear(embed_dim, dim) of each granularity
        for w in self.parameters():
            nn.init.uniform_(w, -bound, bound)

    def forward(self, x: Tensor, index: Tensor, num_slots: int, granularity: int = 0) -> Tensor:
        j = granularity
        q = torch.addmm(self.q_bias[j], segment_max(x, index, num_slots), self.q_weight[j].t()) * self.scaling  # S x D
        k = torch.addmm(self.k_bias[j], x, self.k_weight[j].t())  # N x D
        scores = (q[index] * k).sum(dim=-1)  # N: each token against its own phrase's query
        weights = segment_softmax(scores, index, num_slots)
        return segment_sum(weights.unsqueeze(-1) * x, index, num_slots)

    def forward_all(self, x: Tensor, phrase_index: Tensor, P: int) -> Tensor:
        """Every granularity at once, in one fused attention call (san_attention.py)."""
        op = san_attention if self.use_fast_path else san_attention_ref
        return op(x, phrase_index, P, self.q_weight, self.q_bias, self.k_weight, self.k_bias, self.scaling)

    def forward_all_reference(self, x: Tensor, phrase_index: Tensor, P: int) -> Tensor:
        """forward_all in the flat segment arithmetic of `forward` (san_attention_ref)."""
        return san_attention_ref(x, phrase_index, P, self.q_weight, self.q_bias, self.k_weight, self.k_bias,
                                 self.scaling)


class LSTMComposition(nn.Module):
    """Last hidden state of an LSTM run over each phrase's tokens, mapped back to the model's width.

    The phrases of the batch are packed directly into a PackedSequence (time-major,
    longest phrase first), so the fused LSTM kernel runs over all phrases at once
    without padding them to the longest phrase. nn.LSTM takes one weight set, so this
    composition runs once per granularity.
    """

    def __init__(self, embed_dim: int, dim: int):
        super().__init__()
        self.lstm = nn.LSTM(embed_dim, dim)
        self.out_proj = nn.Linear(dim, embed_dim)

    def forward(self, x: Tensor, index: Tensor, num_slots: int) -> Tensor:
        """x: N x C, index: N (num_slots - 1 = padding). Returns num_slots x C."""
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


class LSTMCompositions(nn.Module):
    """One LSTMComposition per granularity, with the stacked compositions' interface."""

    def __init__(self, num_granularities: int, embed_dim: int, dim: int):
        super().__init__()
        self.per_granularity = nn.ModuleList(LSTMComposition(embed_dim, dim) for _ in range(num_granularities))

    def forward(self, x: Tensor, index: Tensor, num_slots: int, granularity: int = 0) -> Tensor:
        return self.per_granularity[granularity](x, index, num_slots)

    def forward_all(self, x: Tensor, phrase_index: Tensor, P: int) -> Tensor:
        # nn.LSTM takes one weight set: one fused run per granularity in either layout
        B, T, C = x.shape
        index, S = token_slots(phrase_index, P)
        tokens = x.reshape(B * T, C)
        out = torch.stack([comp(tokens, idx, S) for comp, idx in zip(self.per_granularity, index)])
        return phrases_of_slots(out, B, P)


def build_composition(name: str, num_granularities: int, embed_dim: int, dim: int,
                      use_fast_path: bool = True) -> nn.Module:
    if name == "max":
        return MaxPoolComposition()
    if name == "san":
        return SANComposition(num_granularities, embed_dim, dim, use_fast_path)
    if name == "lstm":
        return LSTMCompositions(num_granularities, embed_dim, dim)
    raise MGSAError(f"unknown phrase composition {name!r}: expected one of max, lstm, san")
