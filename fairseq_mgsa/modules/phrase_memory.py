"""F_h = partition -> composition -> interaction: the phrase memory of one granularity."""

from typing import Optional, Tuple

import torch.nn as nn
from torch import Tensor

from .composition import build_composition
from .interaction import build_interaction
from .partition import Partition


class PhraseMemory(nn.Module):
    """Builds H_g (one vector per phrase) from the layer input H and a partition.

    `dim` is the width of the heads this granularity feeds; the parametric
    composition and interaction modules work at that width.
    """

    def __init__(self, embed_dim: int, dim: int, composition: str, interaction: str, onlstm_chunk_size: int):
        super().__init__()
        self.composition = build_composition(composition, embed_dim, dim)
        self.interaction = build_interaction(interaction, embed_dim, dim, onlstm_chunk_size)

    def forward(self, x: Tensor, partition: Partition) -> Tuple[Tensor, Tensor]:
        """x: B x T x C. Returns (H_g, G), both B x P x C: the phrase memory and the
        composed phrases before interaction (what phrase-tag supervision classifies)."""
        B, T, C = x.shape
        P = partition.max_phrases
        slots = B * P
        # global slot of each token; padding tokens go to an extra slot that is dropped
        offsets = (partition.phrase_index.new_ones(B) * P).cumsum(0) - P
        index = partition.phrase_index + offsets.unsqueeze(1)
        index = index.masked_fill(partition.phrase_index < 0, slots).view(-1)
        g = self.composition(x.reshape(B * T, C), index, slots + 1)[:slots].view(B, P, C)
        if self.interaction is None:
            return g, g
        return self.interaction(g, partition.num_phrases), g
