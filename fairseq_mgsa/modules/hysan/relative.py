"""HySAN's hybrid self-attention with relative position representations (HySAN's paper says
its branches are compatible with Shaw et al.'s; this is the combination, for trying it).

The relative key term q_i a^K_ij^T / sqrt(d) enters the one score matrix E that every branch
shares, before the branches' masks are added (attention.py), and every branch's output
gets its own sum_j p_ij a^V_ij beside sum_j p_ij v_j. The a^V term needs the probabilities, which
torch's fused attention does not give back, so every forward takes HySAN's explicit path (one
softmax over E with the stacked masks, one product with V; under --hysan-recompute recomputed in
the backward pass, HybridMultiheadAttention.explicit_recomputed).
"""

from typing import List, Optional, Tuple

from torch import Tensor

from .attention import Branch, HybridMultiheadAttention
from ..relative.attention import RelativePositions, relative_scores


class RelativeHybridMultiheadAttention(HybridMultiheadAttention):
    FUSED = False

    def __init__(self, embed_dim: int, num_heads: int, branches: List[Branch], max_relative_positions: int,
                 **kwargs):
        super().__init__(embed_dim, num_heads, branches, **kwargs)
        self.relative = RelativePositions(max_relative_positions, self.head_dim)

    def scores(self, query: Tensor, key: Optional[Tensor], value: Optional[Tensor],
               key_padding_mask: Optional[Tensor], incremental_state, attn_mask: Optional[Tensor]
               ) -> Tuple[Tensor, Tensor]:
        logits, v, _ = relative_scores(self, self.relative, query, key_padding_mask, incremental_state, attn_mask)
        return logits, v

    def weighted_values(self, probs: Tensor, v: Tensor) -> Tensor:
        tgt_len, src_len = probs.shape[-2:]
        index = self.relative.indices(tgt_len, src_len, probs.device)
        return super().weighted_values(probs, v) + self.relative.value_sums(probs, index)
