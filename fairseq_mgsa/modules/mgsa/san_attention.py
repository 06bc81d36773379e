"""The SAN phrase composition of every granularity in one fused attention call (the GPU layout).

Each phrase slot's query (its max-pooled tokens, projected) attends over its sentence's T
tokens with a Gr x B x P x T membership mask, keys the granularity's key projections of the
tokens, values the tokens themselves: one `scaled_dot_product_attention` call, where the
segment arithmetic of `san_attention_ref` (its reference, below) scores, normalises and sums
by scatters and gathers (some 40 operators forward and backward). Same outputs and
gradients, to rounding.

Slots: sentence b's phrase p is slot b * (P + 1) + 1 + p of its granularity, its padding
tokens share slot b * (P + 1) (max-pooled, projected, never attended from), so one add puts
every token in its slot and the mask is one comparison with the slots' numbers.

Empty slots (past a sentence's phrases, or a granularity with fewer phrases than P) have no
token to attend to: a fully masked row is NaN or 0 depending on the backend. They attend to
every token instead (finite, whatever the backend) and are set to 0 after, as the segment
arithmetic leaves them; their zeroed output sends no gradient back.

Which kernel runs (torch's sdp_utils): the queries and keys are D wide, the values C (the
model's width). Flash attention takes no mask; on CUDA, memory-efficient attention takes a
boolean or additive mask and a value width other than the key width (its check: q and k
widths equal, q and v widths multiples of the GEMM alignment, last dimension contiguous; the
stride-0 values broadcast over granularities are read in place, its backward allocates the
value gradient afresh).
One kernel forward, one backward, plus the conversion of the boolean mask to an additive
one (and its padding to a multiple of 8 keys). The CPU's fused kernel wants q, k and v
equally wide, so where D != C the CPU runs the math path (two products and a softmax,
8 operators each way): counted on the CPU (benchmarks/op_counts.py), this composition
shows those.
"""

from typing import Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from .segments import flat_slots, phrases_of_slots, segment_max, segment_softmax, segment_sum, token_slots, \
    tokens_per_granularity


class SlotMax(torch.autograd.Function):
    """G x S x C: the max of each slot's tokens in each granularity (0 where a slot has none),
    from x (N x C) and the tokens' slots (G x N): the reference's scatter_reduce (amax, into
    zeros, include_self=False) with the same gradient in fewer operators (ten, where torch's
    formula takes fourteen: it also computes the zeros' gradient and compares in float).

    The gradient is torch's for that scatter_reduce, value for value: each slot's gradient is
    shared equally among the tokens tied at its max, and where the max is exactly 0, torch
    counts the zeros the output started from as one more tied candidate (its share is lost),
    so it is done here too; that count also keeps empty slots from dividing by 0."""

    @staticmethod
    def forward(ctx, x: Tensor, index: Tensor, num_slots: int) -> Tensor:
        G, N = index.shape
        idx = index.unsqueeze(-1).expand(G, N, x.size(-1))
        out = x.new_zeros(G, num_slots, x.size(-1)).scatter_reduce(
            1, idx, x.expand(G, N, x.size(-1)), reduce="amax", include_self=False)
        ctx.save_for_backward(x, index, out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, index, out = ctx.saved_tensors
        G, N = index.shape
        idx = index.unsqueeze(-1).expand(G, N, x.size(-1))
        is_max = x.expand(G, N, x.size(-1)) == out.gather(1, idx)
        ties = (out == 0).to(grad.dtype).scatter_add_(1, idx, is_max.to(grad.dtype))
        share = (grad / ties).gather(1, idx)
        return torch.where(is_max, share, 0.0).sum(dim=0), None, None


def phrase_slots(phrase_index: Tensor, P: int) -> Tuple[Tensor, Tensor]:
    """Gr x B x T phrases of the tokens (-1 at padding) -> (index, member): Gr x B x T slot of
    each token among its granularity's B * (P + 1) (module docstring), and the Gr x B x P x T
    membership of the tokens in the phrase slots."""
    Gr, B, T = phrase_index.shape
    slots = torch.arange(B * (P + 1), device=phrase_index.device).view(B, P + 1)
    index = phrase_index + slots[:, 1:2]  # padding (-1) falls in the sentence's slot 0
    member = index.unsqueeze(2) == slots[:, 1:].unsqueeze(-1)
    return index, member


def san_attention(x: Tensor, phrase_index: Tensor, P: int, q_weight: Tensor, q_bias: Tensor, k_weight: Tensor,
                  k_bias: Tensor, scaling: float) -> Tensor:
    """x: B x T x C; phrase_index: Gr x B x T (-1 at padding); weights Gr x D x C, biases Gr x D.
    Returns Gr x B x P x C (SANComposition.forward_all)."""
    B, T, C = x.shape
    G, D = q_weight.shape[:2]
    N = B * T
    index, member = phrase_slots(phrase_index, P)
    # max-pooling: every granularity's slots from the same tokens, read in place
    pooled = SlotMax.apply(x.reshape(N, C), index.view(G, N), B * (P + 1))
    # queries of every slot, the padding slots' too (a slice of the pooled rows would be a copy)
    q = torch.baddbmm(q_bias.unsqueeze(1), pooled, q_weight.transpose(1, 2)).view(G, B, P + 1, D)[:, :, 1:]
    # every granularity's keys in one product, read as Gr x B x T x D in place
    k = F.linear(x, k_weight.view(G * D, C), k_bias.view(G * D)).view(B, T, G, D).permute(2, 0, 1, 3)
    nonempty = member.any(dim=-1, keepdim=True)  # Gr x B x P x 1
    # an empty slot's row (all False) becomes all True: it attends to every token
    mask = member == nonempty
    out = F.scaled_dot_product_attention(q, k, x.unsqueeze(0).expand(G, B, T, C), attn_mask=mask, scale=scaling)
    # where() lays its output out contiguously whatever the kernel's output layout
    return torch.where(nonempty, out, 0.0)


def san_attention_ref(x: Tensor, phrase_index: Tensor, P: int, q_weight: Tensor, q_bias: Tensor, k_weight: Tensor,
                      k_bias: Tensor, scaling: float) -> Tensor:
    """san_attention in the flat segment arithmetic of SANComposition.forward, every
    granularity's tokens copied onto one slot axis: the plain reference of the fused call."""
    G, D = q_weight.shape[:2]
    B, T, C = x.shape
    N = B * T
    x = x.reshape(N, C)
    index, num_slots = token_slots(phrase_index, P)
    flat, S = flat_slots(index, num_slots), G * num_slots
    xs = tokens_per_granularity(x, G)  # Gr*N x C
    pooled = segment_max(xs, flat, S).view(G, num_slots, C)
    q = torch.baddbmm(q_bias.unsqueeze(1), pooled, q_weight.transpose(1, 2)) * scaling
    # every granularity's keys in one product: N x Gr*D, read as Gr x N x D in place
    k = F.linear(x, k_weight.view(G * D, C), k_bias.view(G * D)).view(N, G, D)
    # Gr*N: each token against its own phrase's query
    scores = (q.view(S, D)[flat].view(G, N, D) * k.transpose(0, 1)).sum(dim=-1).view(G * N)
    weights = segment_softmax(scores, flat, S)
    out = segment_sum(weights.unsqueeze(-1) * xs, flat, S).view(G, num_slots, C)
    return phrases_of_slots(out, B, P)
