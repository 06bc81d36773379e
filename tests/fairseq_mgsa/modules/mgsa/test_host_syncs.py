"""An MG-SA layer reads nothing from the device: the phrase axis is sized from the batch's
padded widths (modules/mgsa/partition.py), so that on a GPU the host never waits for it in forward
or backward."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fairseq_mgsa.modules import MultiGranularitySelfAttention, ngram_partition, spans_to_partition

aten = torch.ops.aten
# what makes the host wait for the device: a scalar read, or an output shaped by the data
SYNCS = {aten._local_scalar_dense, aten.nonzero, aten.masked_select, aten._unique2, aten.unique_consecutive,
         aten.bincount, aten.equal, aten.is_nonzero}


class Syncs(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in SYNCS:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def left_padded(lengths):
    mask = torch.ones(len(lengths), max(lengths), dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, max(lengths) - n:] = False
    return mask


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ngram_phrase_slots_are_the_largest_count_of_a_fairseq_batch(n):
    """fairseq pads a batch to its longest sentence: the bound is then the largest phrase count;
    with extra padding it bounds it."""
    mask = left_padded([9, 4, 1])
    part = ngram_partition(mask, n)
    assert part.max_phrases == int(part.num_phrases.max())
    wider = torch.cat([torch.ones(3, 2, dtype=torch.bool), mask], dim=1)
    assert ngram_partition(wider, n).max_phrases >= int(part.num_phrases.max())


@pytest.mark.parametrize("sizes", [[2, 3, 4], [1, 2], [4, 2, 3], [3]])
def test_ngram_partitions_at_once_equal_one_by_one(sizes):
    from fairseq_mgsa.modules.mgsa.partition import Positions, ngram_partitions

    mask = left_padded([9, 4, 1, 6])
    for n, part in zip(sizes, ngram_partitions(sizes, Positions.of(mask))):
        one = ngram_partition(mask, n)
        assert torch.equal(part.phrase_index, one.phrase_index) and torch.equal(part.num_phrases, one.num_phrases)
        assert part.max_phrases == one.max_phrases


def test_tree_phrase_slots_are_the_width_of_the_phrase_files_plus_eos():
    mask = left_padded([6, 3])
    part = spans_to_partition(torch.tensor([[2, 3], [1, 1]]), torch.tensor([2, 2]), mask)
    assert part.max_phrases == 3 == int(part.num_phrases.max())


@pytest.mark.parametrize("granularities", [["word", "ngram2", "ngram3", "ngram4"], ["word", "syn1", "syn2", "syn3"]])
@pytest.mark.parametrize("interaction", ["none", "onlstm"])
def test_partitions_forward_and_backward_read_nothing_from_the_device(granularities, interaction):
    attn = MultiGranularitySelfAttention(16, 4, granularities, interaction=interaction)
    attn.phrase_memory.compose_all_at_once = True  # the GPU's layout
    mask = left_padded([8, 5, 2])
    lengths = torch.tensor([[[2, 3, 2], [1, 3, 0], [1, 0, 0]], [[1, 1, 2], [2, 2, 0], [1, 0, 0]],
                            [[1, 1, 1], [1, 1, 2], [1, 0, 0]]])  # L x B x M, words only
    counts = (lengths > 0).sum(-1)
    x = torch.randn(8, 3, 16, requires_grad=True)
    with Syncs() as syncs:
        parts = {g: ngram_partition(mask, g.size) if g.kind == "ngram"
                 else spans_to_partition(lengths[g.size - 1], counts[g.size - 1], mask)
                 for g in attn.phrase_granularities}
        out, composed = attn(x, key_padding_mask=mask, partitions=parts)
        (out.sum() + sum(c.sum() for c, _ in composed.values())).backward()
    assert syncs.seen == []
