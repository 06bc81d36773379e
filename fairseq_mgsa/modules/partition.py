"""Phrase partition: which phrase every source token belongs to, at one granularity.

A partition is held as a token -> phrase map rather than as a list of spans, so that
composition can be written as batched scatter operations over tokens:

    phrase_index  B x T   phrase of each token within its sentence (0-based),
                          -1 at padding positions
    num_phrases   B       phrases per sentence

Phrases are numbered left to right inside each sentence whatever the batch's
padding side is, so phrase memories are always right-padded along the phrase axis.

The last real token of every source is fairseq's end-of-sentence symbol; it forms a
phrase of its own at every granularity (n-gram and syntactic alike), so the words'
phrases never straddle it.
"""

from typing import Dict, NamedTuple, Optional

import torch
from torch import Tensor

from ..errors import MGSAError
from .granularities import NGRAM, Granularities


class Partition(NamedTuple):
    phrase_index: Tensor  # B x T, long, -1 at padding
    num_phrases: Tensor  # B, long
    max_phrases: int  # P, read from the device once per partition (a host sync)

    @classmethod
    def build(cls, phrase_index: Tensor, num_phrases: Tensor) -> "Partition":
        return cls(phrase_index, num_phrases, int(num_phrases.max()))

    def phrase_padding_mask(self) -> Tensor:
        """B x P, True where a phrase slot is padding."""
        slots = torch.arange(self.max_phrases, device=self.num_phrases.device)
        return slots.unsqueeze(0) >= self.num_phrases.unsqueeze(1)


def token_positions(padding_mask: Tensor):
    """Position of each token within its sentence (left or right padding), and lengths.

    padding_mask: B x T, True at padding. Returns (positions B x T, lengths B).
    """
    real = (~padding_mask).long()
    return real.cumsum(dim=1) - 1, real.sum(dim=1)


def ngram_partition(padding_mask: Tensor, n: int) -> Partition:
    """Non-overlapping n-grams over the words (the last one may be short) + an EOS phrase."""
    pos, lengths = token_positions(padding_mask)
    num_words = lengths - 1
    word_phrases = torch.div(num_words + n - 1, n, rounding_mode="floor")  # ceil(words / n)
    index = torch.div(pos, n, rounding_mode="floor")
    is_eos = pos == (lengths - 1).unsqueeze(1)
    index = torch.where(is_eos, word_phrases.unsqueeze(1), index)
    index = index.masked_fill(padding_mask, -1)
    return Partition.build(index, word_phrases + 1)


def spans_to_partition(phrase_lengths: Tensor, num_phrases: Tensor, padding_mask: Tensor) -> Partition:
    """Partition from per-sentence phrase lengths (words only; EOS is added here).

    phrase_lengths: B x M, right-padded with 0, lengths in tokens of each word phrase
    num_phrases:    B, number of word phrases per sentence (without the EOS phrase)
    padding_mask:   B x T of the token batch (left or right padded)
    """
    pos, lengths = token_positions(padding_mask)
    ends = phrase_lengths.cumsum(dim=1)  # B x M, exclusive end of each phrase
    # phrase of a word = number of phrase ends at or before its position
    index = torch.searchsorted(ends, pos.clamp(min=0), right=True)
    is_eos = pos == (lengths - 1).unsqueeze(1)
    index = torch.where(is_eos, num_phrases.unsqueeze(1), index)
    index = index.masked_fill(padding_mask, -1)
    return Partition.build(index, num_phrases + 1)


def build_partitions(granularities: Granularities, padding_mask: Tensor, phrase_lengths: Optional[Tensor],
                     phrase_counts: Optional[Tensor]) -> Dict[str, Partition]:
    """The partition of every phrase granularity of a batch: n-grams from the padding alone,
    tree level K from the phrase files' level K. phrase_lengths: L x B x M phrase lengths of
    each tree level (words only, right-padded with 0); phrase_counts: L x B (the batch fields
    of the mgsa_translation task)."""
    partitions = {}
    for g in granularities.phrase:
        if g.kind == NGRAM:
            partitions[g] = ngram_partition(padding_mask, g.size)
            continue
        if phrase_lengths is None:
            raise MGSAError(f"MG-SA granularity {g!r} needs the phrase files of mgsa-preprocess: "
                            f"train with --task mgsa_translation on a directory that has them")
        if g.size > phrase_lengths.size(0):
            raise MGSAError(f"MG-SA granularity {g!r} needs tree level {g.size}, but the phrase files "
                            f"hold {phrase_lengths.size(0)} levels (mgsa-preprocess --levels)")
        partitions[g] = spans_to_partition(phrase_lengths[g.size - 1], phrase_counts[g.size - 1], padding_mask)
    return partitions
