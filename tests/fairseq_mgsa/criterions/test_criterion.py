"""The combined criterion: label-smoothed NLL + lambda * phrase-tag loss."""

import math

import pytest
import torch
import torch.nn.functional as F

from fairseq_mgsa.criterions.label_smoothed_cross_entropy_with_phrase_tags import (
    LabelSmoothedCrossEntropyWithPhraseTags,
    phrase_tag_loss,
)
from fairseq_mgsa.modules import spans_to_partition
from tests.fairseq_mgsa.models.test_model import build_syntactic

PAD = 1


def test_phrase_tag_loss_is_the_sum_over_real_phrases():
    g = torch.Generator().manual_seed(0)
    # 2 sentences; level 2 has 3 and 1 word phrases (+ EOS phrase, not supervised)
    logits = torch.randn(2, 4, 7, generator=g)
    tags = torch.full((3, 2, 3), PAD)
    tags[1, 0] = torch.tensor([4, 5, 6])
    tags[1, 1, 0] = 5
    loss, correct, count = phrase_tag_loss([(2, logits, None)], tags, PAD)
    expected, right = 0.0, 0
    for b, phrases in ((0, [(0, 4), (1, 5), (2, 6)]), (1, [(0, 5)])):
        for p, t in phrases:
            expected -= F.log_softmax(logits[b, p], -1)[t].item()
            right += int(logits[b, p].argmax() == t)
    assert count == 4 and correct == right
    assert math.isclose(loss.item(), expected, rel_tol=1e-5)


class Task:
    def __init__(self, tags):
        self.tag_dictionary = tags
        self.target_dictionary = tags


@pytest.mark.parametrize("weight", [0.0, 0.5])
def test_criterion_adds_weighted_tag_loss_and_classifier_always_gets_a_gradient(weight):
    model, d, tags = build_syntactic()
    src = torch.tensor([[5, 6, 7, d.eos()], [d.pad(), 8, 9, d.eos()]])
    lengths = torch.tensor([[[1, 2, 0], [2, 0, 0]], [[1, 1, 1], [1, 1, 0]], [[1, 1, 1], [1, 1, 0]]])
    counts = torch.tensor([[2, 1], [3, 2], [3, 2]])
    phrase_tags = torch.full((3, 2, 3), tags.pad())
    phrase_tags[:, 0, :2] = torch.tensor([tags.index("NP"), tags.index("VP")])
    phrase_tags[:, 1, :1] = tags.index("NP")
    sample = {
        "net_input": {"src_tokens": src, "src_lengths": torch.tensor([4, 3]),
                      "prev_output_tokens": torch.tensor([[d.eos(), 5, 6], [d.eos(), 7, d.pad()]]),
                      "src_phrase_lengths": lengths, "src_phrase_counts": counts},
        "target": torch.tensor([[5, 6, d.eos()], [7, d.eos(), d.pad()]]),
        "ntokens": 5,
        "phrase_tags": phrase_tags,
    }
    crit = LabelSmoothedCrossEntropyWithPhraseTags(Task(tags), False, 0.1, phrase_tag_weight=weight)
    crit_plain = LabelSmoothedCrossEntropyWithPhraseTags(Task(tags), False, 0.1, phrase_tag_weight=0.0)
    torch.manual_seed(0)
    model.train()
    loss, _, log = crit(model, sample)
    # supervised phrases: NP VP in sentence 1 and NP in sentence 2, at each of the 3 levels
    assert log["tag_count"] == 3 * 3
    model.eval()
    l_eval, _, log_eval = crit(model, sample)
    l_plain, _, _ = crit_plain(model, sample)
    assert math.isclose(l_eval.item(), l_plain.item() + weight * log_eval["tag_loss"].item(), rel_tol=1e-5)
    model.train()
    model.zero_grad()
    loss.backward()
    grad = model.encoder.phrase_tag_classifier.weight.grad
    assert grad is not None
    assert (grad.abs().sum() > 0) == (weight > 0)


def test_unknown_tags_are_not_supervised():
    logits = torch.randn(1, 3, 7)
    tags = torch.tensor([[[4, 3]]])  # second phrase has the unknown tag (3)
    loss, correct, count = phrase_tag_loss([(1, logits, None)], tags, PAD, unk=3)
    assert count == 1
    assert math.isclose(loss.item(), -F.log_softmax(logits[0, 0], -1)[4].item(), rel_tol=1e-5)


@pytest.mark.parametrize("levels", [(1, 2, 3), (2, 3), (1, 3)], ids=["all", "block", "not-a-block"])
def test_levels_at_once_equal_level_by_level(levels):
    """The MG-SA encoder classifies a layer's syntactic granularities at once, (levels, n x B x P x
    tags); the loss, correct and count equal those of one entry per level, also with more phrase
    slots P than the tag files' width (padding slots) and with unknown tags."""
    g = torch.Generator().manual_seed(1)
    L, B, M, P, T = 3, 4, 5, 7, 9
    tags = torch.randint(2, T, (L, B, M), generator=g)
    tags[torch.rand(L, B, M, generator=g) < 0.3] = PAD
    logits = torch.randn(len(levels), B, P, T, generator=g, requires_grad=True)
    at_once = phrase_tag_loss([(levels, logits, None)], tags, PAD, unk=3)
    one_by_one = phrase_tag_loss([(k, logits[j], None) for j, k in enumerate(levels)], tags, PAD, unk=3)
    for a, b in zip(at_once, one_by_one):
        torch.testing.assert_close(a, b)
    grads = [torch.autograd.grad(loss[0], logits)[0] for loss in (at_once, one_by_one)]
    torch.testing.assert_close(*grads)
