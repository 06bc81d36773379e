"""Phrase partition: which phrase every source token belongs to, at one granularity.

A partition is held as a token -> phrase map rather than as a list of spans, so that
composition can be written as batched scatter operations over tokens:

    phrase_index  B x T   phrase of each token within its sentence (0-based),
                          -1 at padding positions
    num_phrases   B       phrases per sentence

Phrases are numbered left to right inside each sentence whatever the batch's
padding side is, so phrase memories are always right-padded along the phrase axis.

The phrase axis is P slots long, P known on the host without reading the device (a read
would make the host wait for the GPU, once per granularity and forward): an upper bound of
the batch's phrase counts from the padded widths, ceil((T - 1) / n) + 1 for n-grams of a
T-token batch, M + 1 for the tree levels of phrase files M phrases wide. In fairseq's
batches, padded to their longest sentence, it is the largest count for n-grams and, when
the data holds the levels the model reads (mgsa-preprocess --levels as --mgsa-granularities),
for the deepest tree level; slots past a sentence's count are padding either way.

The last real token of every source is fairseq's end-of-sentence symbol; it forms a
phrase of its own at every granularity (n-gram and syntactic alike), so the words'
phrases never straddle it.
"""

from typing import Dict, List, NamedTuple, Optional, Sequence

import torch
from torch import Tensor

from ...errors import MGSAError
from .granularities import NGRAM, Granularities


class Partition(NamedTuple):
    phrase_index: Tensor  # B x T, long, -1 at padding
    num_phrases: Tensor  # B, long
    max_phrases: int  # P: phrase slots per sentence, at least num_phrases.max() (module docstring)

    def phrase_padding_mask(self) -> Tensor:
        """B x P, True where a phrase slot is padding."""
        slots = torch.arange(self.max_phrases, device=self.num_phrases.device)
        return slots.unsqueeze(0) >= self.num_phrases.unsqueeze(1)


class Positions(NamedTuple):
    """What every granularity's partition reads from the padding, computed once a batch."""
    padding_mask: Tensor  # B x T, True at padding
    pos: Tensor  # B x T, position of each token within its sentence (left or right padding)
    lengths: Tensor  # B
    is_eos: Tensor  # B x T, the last real token

    @classmethod
    def of(cls, padding_mask: Tensor) -> "Positions":
        pos, lengths = token_positions(padding_mask)
        return cls(padding_mask, pos, lengths, pos == (lengths - 1).unsqueeze(1))


def stack_slices(tensors: Sequence[Tensor]) -> Tensor:
    """torch.stack(tensors), read in place (no copy, no kernel) where they are consecutive
    slices of one tensor along its first dimension, as the partitions of consecutive n-grams
    or tree levels are (ngram_partitions, tree_partitions make them at once)."""
    first = tensors[0]
    base = first._base
    if base is not None and base.dim() == first.dim() + 1:
        step = base.stride(0)
        if all(t._base is base and t.shape == first.shape and t.stride() == first.stride()
               and t.storage_offset() == first.storage_offset() + i * step for i, t in enumerate(tensors)):
            return base.as_strided((len(tensors), *first.shape), (step, *first.stride()), first.storage_offset())
    return torch.stack(list(tensors))


def token_positions(padding_mask: Tensor):
    """Position of each token within its sentence (left or right padding), and lengths.

    padding_mask: B x T, True at padding. Returns (positions B x T, lengths B).
    """
    real = (~padding_mask).long()
    return real.cumsum(dim=1) - 1, real.sum(dim=1)


def with_eos(index: Tensor, num_word_phrases: Tensor, at: Positions) -> Tensor:
    """index (... x B x T) with the EOS token in a phrase of its own after the words' and -1 at padding."""
    return torch.where(at.is_eos, num_word_phrases.unsqueeze(-1), index).masked_fill(at.padding_mask, -1)


def ngram_partition(padding_mask: Tensor, n: int, at: Optional[Positions] = None) -> Partition:
    """Non-overlapping n-grams over the words (the last one may be short) + an EOS phrase."""
    at = at or Positions.of(padding_mask)
    word_phrases = torch.div(at.lengths + (n - 2), n, rounding_mode="floor")  # ceil(words / n), words = length - 1
    index = with_eos(torch.div(at.pos, n, rounding_mode="floor"), word_phrases, at)
    return Partition(index, word_phrases + 1, (padding_mask.size(1) - 1 + n - 1) // n + 1)


def ngram_partitions(sizes: List[int], at: Positions) -> List[Partition]:
    """ngram_partition of each n of `sizes`, in one set of operations when they are consecutive
    (2, 3, 4: the sizes made on the device by arange, not copied from the host)."""
    consecutive = sizes == list(range(sizes[0], sizes[0] + len(sizes)))
    if len(sizes) == 1 or not consecutive:
        return [ngram_partition(at.padding_mask, n, at) for n in sizes]
    n = torch.arange(sizes[0], sizes[0] + len(sizes), device=at.pos.device).unsqueeze(1)  # N x 1
    word_phrases = torch.div(at.lengths + (n - 2), n, rounding_mode="floor")  # N x B
    index = with_eos(torch.div(at.pos, n.unsqueeze(2), rounding_mode="floor"), word_phrases, at)
    T = at.padding_mask.size(1)
    return [Partition(i, c, (T - 1 + k - 1) // k + 1)
            for i, c, k in zip(index.unbind(0), (word_phrases + 1).unbind(0), sizes)]


def tree_partitions(phrase_lengths: Tensor, num_phrases: Tensor, at: Positions) -> List[Partition]:
    """The partitions of L tree levels at once, from per-sentence phrase lengths (words only;
    EOS is added here): phrase_lengths L x B x M, right-padded with 0, lengths in tokens of each
    word phrase; num_phrases L x B, word phrases per sentence."""
    L, B, M = phrase_lengths.shape
    ends = phrase_lengths.cumsum(dim=-1)  # exclusive end of each phrase
    # phrase of a word = number of phrase ends at or before its position
    words = at.pos.clamp(min=0).unsqueeze(0).expand(L, *at.pos.shape).contiguous()
    index = with_eos(torch.searchsorted(ends, words, right=True), num_phrases, at)
    return [Partition(i, n, M + 1) for i, n in zip(index.unbind(0), (num_phrases + 1).unbind(0))]


def spans_to_partition(phrase_lengths: Tensor, num_phrases: Tensor, padding_mask: Tensor) -> Partition:
    """Partition from per-sentence phrase lengths (words only; EOS is added here).

    phrase_lengths: B x M, right-padded with 0, lengths in tokens of each word phrase
    num_phrases:    B, number of word phrases per sentence (without the EOS phrase)
    padding_mask:   B x T of the token batch (left or right padded)
    """
    return tree_partitions(phrase_lengths.unsqueeze(0), num_phrases.unsqueeze(0), Positions.of(padding_mask))[0]


def build_partitions(granularities: Granularities, padding_mask: Tensor, phrase_lengths: Optional[Tensor],
                     phrase_counts: Optional[Tensor]) -> Dict[str, Partition]:
    """The partition of every phrase granularity of a batch: n-grams from the padding alone,
    tree level K from the phrase files' level K. phrase_lengths: L x B x M phrase lengths of
    each tree level (words only, right-padded with 0); phrase_counts: L x B (the batch fields
    of the mgsa_translation task). The positions are computed once, consecutive n-gram sizes and
    the tree levels read (1..K) partitioned at once."""
    at = Positions.of(padding_mask)
    ngrams = [g for g in granularities.phrase if g.kind == NGRAM]
    partitions = dict(zip(ngrams, ngram_partitions([g.size for g in ngrams], at))) if ngrams else {}
    levels = [g for g in granularities.phrase if g.kind != NGRAM]
    if not levels:
        return partitions
    if phrase_lengths is None:
        raise MGSAError(f"MG-SA granularity {levels[0]!r} needs the phrase files of mgsa-preprocess: "
                        f"train with --task mgsa_translation on a directory that has them")
    deepest = max(levels, key=lambda g: g.size)
    if deepest.size > phrase_lengths.size(0):
        raise MGSAError(f"MG-SA granularity {deepest!r} needs tree level {deepest.size}, but the phrase files "
                        f"hold {phrase_lengths.size(0)} levels (mgsa-preprocess --levels)")
    deepest = deepest.size
    trees = tree_partitions(phrase_lengths[:deepest], phrase_counts[:deepest], at)
    partitions.update({g: trees[g.size - 1] for g in levels})
    return partitions
