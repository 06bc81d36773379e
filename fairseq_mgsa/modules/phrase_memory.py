"""F_h = partition -> composition -> interaction: the phrase memories of an MG-SA layer.

All phrase granularities of the layer are built at once (each with its own weights,
stacked along a leading granularity axis), over one phrase axis of P = the largest
phrase count of the batch over granularities; a granularity's extra slots are padding.
"""

from typing import List, Tuple

import torch
import torch.nn as nn
from torch import Tensor

from .composition import build_composition
from .interaction import build_interaction
from .partition import Partition


class PhraseMemory(nn.Module):
    """Builds H_g (one vector per phrase) of every phrase granularity from the layer input H.

    `dim` is the width of the heads a granularity feeds; the parametric composition and
    interaction modules work at that width.
    """

    def __init__(self, num_granularities: int, embed_dim: int, dim: int, composition: str, interaction: str,
                 onlstm_chunk_size: int):
        super().__init__()
        self.num_granularities = num_granularities
        self.composition = build_composition(composition, num_granularities, embed_dim, dim)
        self.interaction = build_interaction(interaction, num_granularities, embed_dim, dim, onlstm_chunk_size)

    def forward(self, x: Tensor, partitions: List[Partition]) -> Tuple[Tensor, Tensor]:
        """x: B x T x C, one partition per granularity. Returns (H_g, G), both Gr x B x P x C:
        the phrase memories and the composed phrases before interaction (what phrase-tag
        supervision classifies)."""
        B, T, C = x.shape
        Gr = len(partitions)
        P = max(p.max_phrases for p in partitions)
        slots = B * P
        phrase_index = torch.stack([p.phrase_index for p in partitions])  # Gr x B x T, -1 at padding
        # slot of each token in its granularity; padding tokens go to an extra slot that is dropped
        offsets = torch.arange(0, slots, P, device=x.device).unsqueeze(1)  # B x 1
        index = (phrase_index + offsets).masked_fill(phrase_index < 0, slots).view(Gr, B * T)
        g = self.composition(x.reshape(B * T, C), index, slots + 1)[:, :slots].view(Gr, B, P, C)
        if self.interaction is None:
            return g, g
        return self.interaction(g, [p.max_phrases for p in partitions]), g
