"""Batches, pooling, the MLP classifier and its training with early stopping (mgsa-probe).

A probe reads encoder states B x T x C and pools them into one vector per sentence (mean
over the non-padding positions, the end-of-sentence token included) or per word (mean
over the word's subword tokens), then classifies it with one hidden layer (Conneau et
al. 2018: sigmoid, dropout, Adam, batch 64, early stopping on validation accuracy).
Pooling is batched: each batch carries, for every token, the index of its word among the
batch's words (-1 for EOS and padding), and index_add_ sums the tokens into words.
"""

import copy
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.data import data_utils
from mgsa_preprocess.progress import bar


@dataclass
class Item:
    """One sentence as the encoder reads it."""
    tokens: torch.Tensor  # T (subword or word ids, EOS last)
    pieces: List[int]  # tokens per word (sums to T - 1)
    phrases: Optional[List[torch.Tensor]] = None  # per tree level: phrase lengths in tokens (without EOS)


@dataclass
class Batch:
    tokens: torch.Tensor  # B x T, right-padded
    lengths: torch.Tensor  # B
    word_index: torch.Tensor  # B x T: the token's word among the batch's words, -1 for EOS / padding
    n_words: int
    phrase_lengths: Optional[torch.Tensor] = None  # L x B x M, right-padded with 0
    phrase_counts: Optional[torch.Tensor] = None  # L x B
    targets: Optional[torch.Tensor] = None  # B (sentence task) or W (word task)


def collate(items: Sequence[Item], pad: int, targets: Optional[torch.Tensor] = None) -> Batch:
    tokens = data_utils.collate_tokens([it.tokens for it in items], pad, left_pad=False)  # B x T
    word_index = torch.full(tokens.shape, -1, dtype=torch.long)
    offset = 0
    for b, it in enumerate(items):  # collation (not the forward): which word each token belongs to
        ids = torch.arange(offset, offset + len(it.pieces)).repeat_interleave(torch.tensor(it.pieces, dtype=torch.long))
        word_index[b, :ids.numel()] = ids
        offset += len(it.pieces)
    batch = Batch(tokens, torch.tensor([it.tokens.numel() for it in items]), word_index, offset, targets=targets)
    if items[0].phrases is not None:
        levels = len(items[0].phrases)
        width = max(p.numel() for it in items for p in it.phrases)
        batch.phrase_lengths = torch.zeros(levels, len(items), width, dtype=torch.long)
        batch.phrase_counts = torch.zeros(levels, len(items), dtype=torch.long)
        for b, it in enumerate(items):
            for k, p in enumerate(it.phrases):
                batch.phrase_lengths[k, b, :p.numel()] = p
                batch.phrase_counts[k, b] = p.numel()
    return batch


def pool(x: torch.Tensor, padding_mask: torch.Tensor, batch: Batch) -> Tuple[torch.Tensor, torch.Tensor]:
    """(sentence means B x C, word means W x C) of encoder states x (B x T x C)."""
    keep = (~padding_mask).unsqueeze(-1).type_as(x)  # B x T x 1
    sentences = (x * keep).sum(1) / keep.sum(1).clamp(min=1)  # B x C
    flat = batch.word_index.reshape(-1)  # B*T
    on_word = flat >= 0
    states = x.reshape(-1, x.size(-1))[on_word]  # tokens of words x C
    words = x.new_zeros(batch.n_words, x.size(-1)).index_add_(0, flat[on_word], states)  # W x C
    sizes = x.new_zeros(batch.n_words).index_add_(0, flat[on_word], x.new_ones(states.size(0)))
    return sentences, words / sizes.clamp(min=1).unsqueeze(-1)


class MLP(nn.Module):
    """One hidden layer with a sigmoid, as Conneau et al.'s probing classifier."""

    def __init__(self, dim: int, classes: int, hidden: int = 128, dropout: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Dropout(dropout), nn.Linear(dim, hidden), nn.Sigmoid(), nn.Dropout(dropout),
                                 nn.Linear(hidden, classes))

    def forward(self, features):  # N x C -> N x classes
        return self.net(features)


def accuracy(model: nn.Module, batches: Iterable, step: Callable) -> float:
    model.eval()
    right = total = 0
    with torch.no_grad():
        for batch in batches:
            logits, targets = step(batch)
            right += int((logits.argmax(-1) == targets).sum())
            total += targets.numel()
    return 100.0 * right / max(1, total)


@dataclass
class FitResult:
    test: float
    valid: float
    epochs: int
    best_epoch: int


def fit(model: nn.Module, step: Callable, train: Callable[[int], Iterable], valid: List, test: List,
        epochs: int, patience: int, lr: float, desc: str) -> FitResult:
    """Train `model` (step(batch) -> logits, targets) with Adam; keep the weights of the
    epoch with the best validation accuracy; stop after `patience` epochs without a gain
    (or at 100% on valid).
    train(epoch) gives the epoch's (shuffled) batches."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=lr)
    best, best_state, best_epoch, stale, epoch = -1.0, None, 0, 0, 0
    progress = bar(total=epochs, desc=desc, unit="epoch")
    for epoch in range(1, epochs + 1):
        model.train()
        for batch in train(epoch):
            logits, targets = step(batch)
            loss = F.cross_entropy(logits, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        acc = accuracy(model, valid, step)
        progress.update(1)
        progress.set_postfix(valid=f"{acc:.1f}")
        if acc > best:
            best, best_epoch, stale = acc, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
            if best >= 100.0:  # nothing left to gain on valid
                break
        else:
            stale += 1
            if stale >= patience:
                break
    progress.close()
    model.load_state_dict(best_state)
    return FitResult(accuracy(model, test, step), best, epoch, best_epoch)


def shuffled_chunks(n: int, size: int, seed: int) -> List[torch.Tensor]:
    """A seeded permutation of range(n) cut into chunks of `size` (the batches of one epoch)."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return list(order.split(size))
