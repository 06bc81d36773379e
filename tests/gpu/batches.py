"""Inputs of the GPU tests: left-padded batches (fairseq's sources) with random parse trees of
three levels, as the mgsa_translation task hands them to the encoder, and the errors the tests
measure."""

import random
from typing import Dict, List, Sequence, Tuple

import torch
from torch import Tensor

from fairseq_mgsa.modules.mgsa.granularities import Granularities
from fairseq_mgsa.modules.mgsa.partition import Partition, build_partitions

# the paper's syntactic MG-SA (the mgsa_syntactic system): words and three tree levels
SYNTACTIC = "word,syn1,syn2,syn3"
LEVELS = 3


def lengths_of_batch(sentences: int, longest: int, seed: int) -> List[int]:
    """Tokens (with EOS) of each sentence: the longest, one EOS alone, the rest between."""
    rng = random.Random(seed)
    return [longest, 1] + [rng.randint(2, longest) for _ in range(sentences - 2)]


def padding_mask(lengths: Sequence[int], left: bool = True) -> Tensor:
    T = max(lengths)
    mask = torch.ones(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, slice(T - n, T) if left else slice(0, n)] = False
    return mask


def random_trees(lengths: Sequence[int], seed: int) -> Tuple[Tensor, Tensor]:
    """Phrase lengths (L x B x M, words only, right-padded with 0) and counts (L x B) of LEVELS
    nested levels: level 1 splits the words into phrases of 1-3 words, each higher level joins
    1-3 consecutive phrases of the level below (the phrase files' fields)."""
    rng = random.Random(seed)
    levels = [[] for _ in range(LEVELS)]
    for n in lengths:
        words, phrases = n - 1, []  # EOS is not a word
        while words > 0:
            phrases.append(min(words, rng.randint(1, 3)))
            words -= phrases[-1]
        for level in levels:
            level.append(phrases)
            joined = []
            while phrases:
                k = rng.randint(1, 3)
                joined.append(sum(phrases[:k]))
                phrases = phrases[k:]
            phrases = joined
    M = max(1, max(len(p) for level in levels for p in level))
    lengths_t = torch.zeros(LEVELS, len(lengths), M, dtype=torch.long)
    counts = torch.zeros(LEVELS, len(lengths), dtype=torch.long)
    for k, level in enumerate(levels):
        for b, p in enumerate(level):
            lengths_t[k, b, :len(p)] = torch.tensor(p, dtype=torch.long)
            counts[k, b] = len(p)
    return lengths_t, counts


def syntactic_batch(lengths: Sequence[int], seed: int, device) -> Tuple[Tensor, Dict[str, Partition]]:
    """(B x T padding mask, the partitions of SYNTACTIC's phrase granularities) on `device`, as the
    MG-SA encoder builds them (build_partitions) from the task's phrase fields."""
    mask = padding_mask(lengths)
    phrase_lengths, counts = random_trees(lengths, seed)
    mask, phrase_lengths, counts = mask.to(device), phrase_lengths.to(device), counts.to(device)
    return mask, build_partitions(Granularities.parse(SYNTACTIC), mask, phrase_lengths, counts)


def rounded(t: Tensor, dtype: torch.dtype) -> Tensor:
    """t (float64) rounded to dtype and back: the same numbers in both precisions, so that a
    difference is the computation's, not the inputs' rounding."""
    return t.to(dtype).to(torch.float64)


def relative_errors(got: Dict[str, Tensor], ref: Dict[str, Tensor], own_scale: bool = True) -> Dict[str, float]:
    """Each tensor's largest error relative to its own largest float64 value (own_scale), or to the
    largest float64 value of all the tensors (one scale, as tests/fairseq_mgsa/modules/
    test_half_precision.py measures half precision). With its own scale, a tensor that is zero in
    exact arithmetic (float64 leaves rounding, under 1e-6 of the largest of all: a key bias's
    gradient under softmax, whose shift cancels) is measured against the largest of all: in any
    other precision it is rounding noise of the others' size."""
    overall = max(r.abs().max().item() for r in ref.values())
    out = {}
    for name, r in ref.items():
        g = got[name].detach().to("cpu", torch.float64)
        assert g.shape == r.shape, (name, g.shape, r.shape)
        if not torch.isfinite(g).all():
            out[name] = float("inf")
            continue
        scale = r.abs().max().item() if own_scale else overall
        if scale <= 1e-6 * overall:
            scale = overall
        out[name] = (g - r).abs().max().item() / scale
    return out


def assert_within(errors: Dict[str, float], tol: float, what: str):
    worst = max(errors, key=errors.get)
    print(f"{what}: worst {worst} {errors[worst]:.2e} (tolerance {tol:g})")
    assert errors[worst] <= tol, (f"{what}: {worst} off by {errors[worst]:.2e} of its scale (tolerance {tol:g}); "
                                  f"all: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
