"""Multi-granularity self-attention (MG-SA): heads split over word and phrase memories.

Heads are split evenly over the listed granularities, in order. Every head keeps a
word-level query; a phrase head's keys and values come from the phrase memory H_g of
its granularity instead of the words:

    Q_h = H W_Q^h,   K_h = H_g W_K^h,   V_h = H_g W_V^h
    MG-SA(H) = [O_1 .. O_N] W_O

The module subclasses fairseq's MultiheadAttention so that W_Q, W_K, W_V, W_O, their
initialisation and their checkpoint names are fairseq's own: with only `word`
granularities it is ordinary multi-head attention.
"""

from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor

from ..errors import MGSAError

from .partition import NGRAM, SYNTACTIC, Partition
from .phrase_memory import PhraseMemory


def check_granularity(name: str) -> None:
    if name != "word" and not NGRAM.match(name) and not SYNTACTIC.match(name):
        raise MGSAError(
            f"unknown MG-SA granularity {name!r}: expected 'word', 'ngramN' (e.g. ngram3) or 'synK' (e.g. syn2)"
        )


class MultiGranularitySelfAttention(MultiheadAttention):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        granularities: List[str],
        composition: str = "san",
        interaction: str = "none",
        onlstm_chunk_size: int = 2,
        dropout: float = 0.0,
        **kwargs,
    ):
        super().__init__(embed_dim, num_heads, dropout=dropout, self_attention=True, **kwargs)
        for g in granularities:
            check_granularity(g)
        if num_heads % len(granularities) != 0:
            raise MGSAError(
                f"MG-SA splits heads evenly over granularities: {num_heads} heads cannot be split "
                f"over {len(granularities)} granularities ({','.join(granularities)})"
            )
        self.granularities = list(granularities)
        self.heads_per_granularity = num_heads // len(granularities)
        group_dim = self.heads_per_granularity * self.head_dim
        # one phrase memory per distinct phrase granularity, shared by its head groups
        self.phrase_memories = nn.ModuleDict({
            g: PhraseMemory(embed_dim, group_dim, composition, interaction, onlstm_chunk_size)
            for g in dict.fromkeys(self.granularities) if g != "word"
        })

    @property
    def phrase_granularities(self) -> List[str]:
        return list(self.phrase_memories.keys())

    def forward(
        self,
        query: Tensor,
        key_padding_mask: Optional[Tensor],
        partitions: Dict[str, Partition],
    ) -> Tuple[Tensor, Dict[str, Tuple[Tensor, Partition]]]:
        """query: T x B x C; key_padding_mask: B x T (True at padding) or None.

        Returns the output (T x B x C) and, for every phrase granularity, the composed
        phrases G (B x P x C) with their partition, for phrase-tag supervision.
        """
        T, B, C = query.shape
        x = query.transpose(0, 1)  # B x T x C
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # B x H x T x d
        memories, composed = {}, {}
        for g, memory in self.phrase_memories.items():
            h_g, g_m = memory(x, partitions[g])  # B x P x C
            memories[g] = (h_g, ~partitions[g].phrase_padding_mask())
            composed[g] = (g_m, partitions[g])
        word_mask = None if key_padding_mask is None else ~key_padding_mask

        dropout_p = self.dropout_module.p if self.training else 0.0
        hpg, outputs = self.heads_per_granularity, []
        for i, g in enumerate(self.granularities):
            src, keep = (x, word_mask) if g == "word" else memories[g]  # B x S x C, B x S
            rows = slice(i * hpg * self.head_dim, (i + 1) * hpg * self.head_dim)
            k = F.linear(src, self.k_proj.weight[rows], self.k_proj.bias[rows])
            v = F.linear(src, self.v_proj.weight[rows], self.v_proj.bias[rows])
            S = src.size(1)
            k = k.view(B, S, hpg, self.head_dim).transpose(1, 2)  # B x h x S x d
            v = v.view(B, S, hpg, self.head_dim).transpose(1, 2)
            mask = None if keep is None else keep[:, None, None, :]
            outputs.append(F.scaled_dot_product_attention(
                q[:, i * hpg:(i + 1) * hpg], k, v, attn_mask=mask, dropout_p=dropout_p))
        out = torch.cat(outputs, dim=1).transpose(1, 2).reshape(B, T, C)  # B x T x C
        return self.out_proj(out).transpose(0, 1), composed
