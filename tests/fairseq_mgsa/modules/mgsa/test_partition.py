"""stack_slices: the partitions of a batch's granularities stacked, in place where they were
made at once."""

import torch

from fairseq_mgsa.modules.mgsa.partition import Positions, ngram_partitions, stack_slices, tree_partitions


def left_padded(lengths):
    mask = torch.ones(len(lengths), max(lengths), dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, max(lengths) - n:] = False
    return mask


def test_stack_slices_reads_partitions_made_at_once_in_place():
    at = Positions.of(left_padded([9, 4, 1, 6]))
    ngrams = ngram_partitions([2, 3, 4], at)
    lengths = torch.tensor([[[2, 3, 3], [1, 0, 0], [0, 0, 0], [5, 0, 0]], [[5, 3, 0], [1, 0, 0], [0, 0, 0], [5, 0, 0]]])
    trees = tree_partitions(lengths, torch.tensor([[3, 1, 0, 1], [2, 1, 0, 1]]), at)
    for parts in (ngrams, ngrams[1:], trees, trees[1:]):
        for field in ("phrase_index", "num_phrases"):
            tensors = [getattr(p, field) for p in parts]
            stacked = stack_slices(tensors)
            assert torch.equal(stacked, torch.stack(tensors))
            assert stacked.untyped_storage().data_ptr() == tensors[0].untyped_storage().data_ptr()  # no copy


def test_stack_slices_copies_what_is_not_consecutive():
    at = Positions.of(left_padded([9, 4, 1, 6]))
    two, three, four = ngram_partitions([2, 3, 4], at)
    for tensors in ([four.phrase_index, two.phrase_index], [two.phrase_index, four.phrase_index],
                    [two.phrase_index, torch.zeros_like(three.phrase_index)]):
        stacked = stack_slices(tensors)
        assert torch.equal(stacked, torch.stack(tensors))
        assert stacked.untyped_storage().data_ptr() != tensors[0].untyped_storage().data_ptr()
