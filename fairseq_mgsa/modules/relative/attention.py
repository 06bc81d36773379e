"""Self-attention with relative position representations (Shaw, Uszkoreit and Vaswani,
"Self-Attention with Relative Position Representations", NAACL 2018).

Every layer learns two tables of (2k + 1) vectors of the head dimension, a^K and a^V, one
entry per clipped distance clip(j - i, -k, k), shared by the layer's heads. For query i and
key j (d: the head dimension):

    e_ij  = q_i (k_j + a^K_ij)^T / sqrt(d)
    z_i   = sum_j softmax_j(e_ij) (v_j + a^V_ij)

Both relative terms are batched as in the paper's efficient form: the table gathered at the
T x S distances (T x S x d, the same for every sentence and head) against the queries (the
heads and sentences as the batch of one matmul per query position), and the probabilities
against the gathered a^V likewise. Query i sits at position i + (S - T), so in an incremental
decoding step (T = 1) the new query measures its distances to the cached positions 0..t;
fairseq's key/value cache and its beam reordering are MultiheadAttention's own
(`_get_input_buffer`, `reorder_incremental_state`). Left padding shifts every position of a
sentence alike, so the distances between real tokens do not depend on it.
"""

import functools
from typing import Dict, Optional, Tuple

import torch
from fairseq import utils
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn

from ...errors import MGSAError


@functools.lru_cache(maxsize=64)  # a few training lengths; decoding steps pass through
def relative_indices(tgt_len: int, src_len: int, max_distance: int, device: torch.device) -> Tensor:
    """T x S long: clip(j - i, -k, k) + k, the row of the tables for query i and key j, with
    query i at position i + (S - T). Cached per shape: callers must not change it in place."""
    with torch.inference_mode(False), torch.no_grad():  # a normal tensor even under inference_mode
        i = torch.arange(tgt_len, device=device) + (src_len - tgt_len)
        j = torch.arange(src_len, device=device)
        return (j[None, :] - i[:, None]).clamp(-max_distance, max_distance) + max_distance


class RelativePositions(nn.Module):
    """The tables a^K and a^V of one layer, (2k + 1) x d_head each, shared across its heads."""

    def __init__(self, max_distance: int, head_dim: int):
        super().__init__()
        if max_distance < 1:
            raise MGSAError(f"--max-relative-positions {max_distance}: expected a clipping distance k >= 1")
        self.max_distance = max_distance
        self.keys = nn.Parameter(torch.empty(2 * max_distance + 1, head_dim))
        self.values = nn.Parameter(torch.empty(2 * max_distance + 1, head_dim))
        # the scale of a head's keys and values at initialisation (fairseq's projections)
        nn.init.normal_(self.keys, std=head_dim ** -0.5)
        nn.init.normal_(self.values, std=head_dim ** -0.5)

    def indices(self, tgt_len: int, src_len: int, device: torch.device) -> Tensor:
        return relative_indices(tgt_len, src_len, self.max_distance, device)

    def key_logits(self, q: Tensor, index: Tensor) -> Tensor:
        """q (already scaled by 1/sqrt(d)): B*H x T x d -> q_i a^K_ij^T: B*H x T x S."""
        return torch.einsum("btd,tsd->bts", q, self.keys.to(q.dtype)[index])

    def value_sums(self, probs: Tensor, index: Tensor) -> Tensor:
        """probs: ... x T x S -> sum_j p_ij a^V_ij: ... x T x d."""
        return torch.einsum("...ts,tsd->...td", probs, self.values.to(probs.dtype)[index])


def relative_scores(attention: MultiheadAttention, relative: RelativePositions, query: Tensor,
                    key_padding_mask: Optional[Tensor], incremental_state, attn_mask: Optional[Tensor]
                    ) -> Tuple[Tensor, Tensor, Tensor]:
    """Self-attention scores with the relative key term, for a MultiheadAttention's
    projections and its incremental cache.
    query: T x B x C. Returns (E: B*H x T x S, attn_mask added, padded keys -inf;
    V: B*H x S x d; the T x S table rows)."""
    tgt_len, bsz, _ = query.size()
    heads, head_dim = attention.num_heads, attention.head_dim

    def heads_first(x):  # T x B x C -> B*H x T x d
        return x.contiguous().view(-1, bsz * heads, head_dim).transpose(0, 1)

    q = heads_first(attention.q_proj(query) * attention.scaling)
    k, v = heads_first(attention.k_proj(query)), heads_first(attention.v_proj(query))
    if incremental_state is not None:
        # the cache as fairseq's MultiheadAttention keeps it (B x H x S x d), so that its
        # reorder_incremental_state follows the beam
        saved = attention._get_input_buffer(incremental_state)
        if "prev_key" in saved:
            k = torch.cat([saved["prev_key"].view(bsz * heads, -1, head_dim), k], dim=1)
            v = torch.cat([saved["prev_value"].view(bsz * heads, -1, head_dim), v], dim=1)
        key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
            key_padding_mask=key_padding_mask, prev_key_padding_mask=saved.get("prev_key_padding_mask"),
            batch_size=bsz, src_len=k.size(1), static_kv=False)
        saved["prev_key"] = k.view(bsz, heads, -1, head_dim)
        saved["prev_value"] = v.view(bsz, heads, -1, head_dim)
        saved["prev_key_padding_mask"] = key_padding_mask
        attention._set_input_buffer(incremental_state, saved)
    src_len = k.size(1)
    index = relative.indices(tgt_len, src_len, query.device)
    logits = torch.bmm(q, k.transpose(1, 2)) + relative.key_logits(q, index)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            logits = logits.masked_fill(attn_mask.unsqueeze(0), float("-inf"))
        else:
            logits = logits + attn_mask.unsqueeze(0)
    if key_padding_mask is not None:
        logits = logits.view(bsz, heads, tgt_len, src_len).masked_fill(
            key_padding_mask.bool()[:, None, None, :], float("-inf")).view(bsz * heads, tgt_len, src_len)
    return logits, v, index


def softmax_of_masked_rows(logits: Tensor, onnx_trace: bool = False) -> Tensor:
    """Softmax over the keys (last dim), with zeros for a query that may attend to no key at
    all, as torch's attention (fairseq's path for its own MultiheadAttention) gives for such
    rows. A left-padded target's padding queries are such rows under the causal mask: their
    keys are all padding. A plain softmax would make them NaN, and the NaN would reach every
    real position at the next layer through P V (0 * NaN = NaN). Rows with a key are unchanged;
    no NaN in the forward or the backward pass."""
    none = torch.isneginf(logits).all(dim=-1, keepdim=True)
    probs = utils.softmax(logits.masked_fill(none, 0.0), dim=-1, onnx_trace=onnx_trace)
    return probs.masked_fill(none, 0.0)


class RelativeMultiheadAttention(MultiheadAttention):
    """fairseq's MultiheadAttention (projections, dropout, cache and its beam reordering) as
    self-attention with relative position representations, k = max_relative_positions."""

    def __init__(self, embed_dim: int, num_heads: int, max_relative_positions: int, dropout: float = 0.0,
                 q_noise: float = 0.0, qn_block_size: int = 8):
        super().__init__(embed_dim, num_heads, dropout=dropout, self_attention=True,
                         q_noise=q_noise, qn_block_size=qn_block_size)
        self.relative = RelativePositions(max_relative_positions, self.head_dim)

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """query: T x B x C (self-attention: key and value are the query). Returns T x B x C
        and, if asked, the attention weights as fairseq's MultiheadAttention does."""
        if static_kv:
            raise ValueError("RelativeMultiheadAttention is self-attention; static_kv is not supported")
        tgt_len, bsz, embed_dim = query.size()
        logits, v, index = relative_scores(self, self.relative, query, key_padding_mask, incremental_state, attn_mask)
        if before_softmax:
            return logits, v
        probs_float = softmax_of_masked_rows(logits, self.onnx_trace)
        probs = self.dropout_module(probs_float.type_as(logits))
        z = torch.bmm(probs, v) + self.relative.value_sums(probs, index)  # B*H x T x d
        attn = self.out_proj(z.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim))
        if not (need_weights or need_head_weights):
            return attn, None
        weights = probs_float.view(bsz, self.num_heads, tgt_len, -1).transpose(1, 0)  # H x B x T x S
        return attn, (weights if need_head_weights else weights.mean(dim=0))
