"""F_h = partition -> composition -> interaction: the phrase memories of an MG-SA layer.

All phrase granularities of the layer are built by one module (each with its own weights,
stacked along a leading granularity axis). Interaction runs for all of them at once, over
one phrase axis of P = the largest phrase count, where a granularity's extra slots are
padding; composition too on a GPU, granularity by granularity on a CPU (see composition.py).
"""

from typing import Iterator, List, Mapping, Optional, Sequence, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from .composition import build_composition
from .interaction import build_interaction
from .partition import Partition, stack_slices


class ComposedPhrases(Mapping):
    """The composed phrases G of an MG-SA layer's phrase granularities as built, one tensor
    (`phrases`: Gr x B x P x C, granularities in `granularities` order), read per granularity
    as a mapping g -> (B x P_g x C, its partition). Phrase-tag supervision classifies the
    tensor's syntactic rows at once."""

    def __init__(self, phrases: Tensor, granularities: Sequence[str], partitions: Sequence[Partition]):
        self.phrases = phrases
        self.granularities = list(granularities)
        self.partitions = list(partitions)

    def __getitem__(self, g) -> Tuple[Tensor, Partition]:
        j = self.granularities.index(g)
        part = self.partitions[j]
        return self.phrases[j, :, :part.max_phrases], part

    def __iter__(self) -> Iterator[str]:
        return iter(self.granularities)

    def __len__(self) -> int:
        return len(self.granularities)


class PhraseMemory(nn.Module):
    """Builds H_g (one vector per phrase) of every phrase granularity from the layer input H.

    `dim` is the width of the heads a granularity feeds; the parametric composition and
    interaction modules work at that width.
    """

    def __init__(self, num_granularities: int, embed_dim: int, dim: int, composition: str, interaction: str,
                 onlstm_chunk_size: int, use_fast_path: bool = True):
        super().__init__()
        self.num_granularities = num_granularities
        self.composition = build_composition(composition, num_granularities, embed_dim, dim, use_fast_path)
        self.interaction = build_interaction(interaction, num_granularities, embed_dim, dim, onlstm_chunk_size,
                                             use_fast_path)
        # the composition's layout: None picks by device (all at once on a GPU); tests set it
        self.compose_all_at_once = None

    def forward(self, x: Tensor, partitions: List[Partition], num_phrases: Optional[Tensor] = None
                ) -> Tuple[Tensor, Tensor]:
        """x: B x T x C, one partition per granularity; num_phrases: their phrase counts stacked
        (Gr x B), if the caller has them. Returns (H_g, G), both Gr x B x P x C: the phrase
        memories and the composed phrases before interaction (what phrase-tag supervision
        classifies)."""
        P = max(p.max_phrases for p in partitions)
        stacked = x.is_cuda if self.compose_all_at_once is None else self.compose_all_at_once
        g = self.compose_all(x, partitions, P) if stacked else self.compose_each(x, partitions, P)
        if self.interaction is None:
            return g, g
        if num_phrases is None:
            num_phrases = stack_slices([p.num_phrases for p in partitions])
        return self.interaction(g, num_phrases), g

    def compose_all(self, x: Tensor, partitions: List[Partition], P: int) -> Tensor:
        """Gr x B x P x C, every granularity in one call over P phrase slots per sentence."""
        phrase_index = stack_slices([p.phrase_index for p in partitions])  # Gr x B x T, -1 at padding
        return self.composition.forward_all(x, phrase_index, P)

    def compose_each(self, x: Tensor, partitions: List[Partition], P: int) -> Tensor:
        """Gr x B x P x C, one call per granularity over its own P_g phrase slots."""
        B, T, C = x.shape
        tokens = x.reshape(B * T, C)
        composed = []
        for j, part in enumerate(partitions):
            P_g = part.max_phrases
            slots = B * P_g
            offsets = torch.arange(0, slots, P_g, device=x.device).unsqueeze(1)  # B x 1
            index = (part.phrase_index + offsets).masked_fill(part.phrase_index < 0, slots).view(B * T)
            g = self.composition(tokens, index, slots + 1, j)[:slots].view(B, P_g, C)
            composed.append(g if P_g == P else F.pad(g, (0, 0, 0, P - P_g)))
        return torch.stack(composed)
