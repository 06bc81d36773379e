"""The segment arithmetic of the phrase compositions: tokens gathered into phrase slots and
reduced per slot by scatters (no padding to the longest phrase, no loop over sentences). Shared
by composition.py and by san_attention.py's reference, below both so neither imports the other.
"""

from typing import Tuple

import torch
from torch import Tensor


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


def flat_slots(index: Tensor, num_slots: int) -> Tensor:
    """Gr x N slots per granularity -> Gr * N slots in one axis of Gr * num_slots (dim-0 scatter
    over a flat index is much faster than along dim 1 of a Gr x N index)."""
    offsets = torch.arange(0, index.size(0) * num_slots, num_slots, device=index.device)
    return (index + offsets.unsqueeze(1)).view(-1)


def token_slots(phrase_index: Tensor, P: int) -> Tuple[Tensor, int]:
    """Gr x B x T phrases of the tokens (-1 at padding) -> (Gr x N slot of each token, S):
    sentence b's phrase p in slot b * P + p of S = B * P + 1, padding in the last one."""
    Gr, B, T = phrase_index.shape
    slots = B * P
    offsets = torch.arange(0, slots, P, device=phrase_index.device).unsqueeze(1)  # B x 1
    return (phrase_index + offsets).masked_fill(phrase_index < 0, slots).view(Gr, B * T), slots + 1


def phrases_of_slots(out: Tensor, B: int, P: int) -> Tensor:
    """Gr x S x C slots (token_slots) -> Gr x B x P x C, the padding slot dropped."""
    return out[:, :B * P].view(out.size(0), B, P, out.size(-1))


def tokens_per_granularity(x: Tensor, G: int) -> Tensor:
    N, C = x.shape
    return x.expand(G, N, C).reshape(G * N, C)
