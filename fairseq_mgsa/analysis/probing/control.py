"""The leakage control of the probing tasks (docs/analyses.md, Probing): probes that see only the partition.

A syntactic MG-SA model is given the top-K tree levels of the very sentence it
classifies, and TSS is nearly decided by the top level's boundaries. Two controls see
those boundaries and no words:

* `boundary_features`: the partition written out as numbers, read by the same MLP as
  set-up 1. Sentence: per level, the number of phrases and the lengths of the first
  MAX_PHRASES phrases. Word: per level, the length of the word's phrase, its offset in
  it, whether it starts / ends it, the phrase's index and the level's phrase count; and
  the word's position and the sentence length.
* the syntactic encoder trained from scratch on input whose every word is <unk>
  (encoders.word_items(blind=True)): what the model itself can get from them.
"""

from typing import List, Sequence, Tuple

import torch
from mgsa_preprocess.partition import partition

from .labels import Sentence

MAX_PHRASES = 12


def boundary_features(sentences: Sequence[Sentence], levels: int) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    """(sentence features N x levels*(1+MAX_PHRASES), word features per sentence W_i x (6*levels+2))."""
    sent, words = [], []
    for s in sentences:
        n = len(s.words)
        row, per_word = [], [[i, n] for i in range(n)]
        for nodes in partition(s.top, levels):
            lengths = [e - b for _, b, e, _ in nodes]
            row += [len(nodes)] + (lengths + [0] * MAX_PHRASES)[:MAX_PHRASES]
            for k, (_, b, e, _) in enumerate(nodes):
                for i in range(b, e):
                    per_word[i] += [e - b, i - b, i == b, i == e - 1, k, len(nodes)]
        sent.append(row)
        words.append(torch.tensor(per_word, dtype=torch.float))
    return torch.tensor(sent, dtype=torch.float), words
