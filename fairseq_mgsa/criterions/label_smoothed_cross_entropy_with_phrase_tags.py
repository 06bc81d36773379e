"""`label_smoothed_cross_entropy_with_phrase_tags`: L = NLL (label-smoothed) + lambda * L_tag.

L_tag = -sum_i log p(t_i | g_i), summed over the syntactic phrases of the batch
(every syntactic granularity of every MG-SA layer), the end-of-sentence phrase,
padding and unknown tags (phrases mgsa-preprocess --lenient repaired, tags unseen in
training) excluded. Logs tag_loss (per phrase, base 2) and tag_accuracy beside
fairseq's figures.

The tag loss is computed whenever the model returns tag logits, also with weight 0,
so that the classifier always has a gradient (zero) and distributed training with
find_unused_parameters=False does not fail.
"""

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq import metrics, utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)


@dataclass
class PhraseTagCriterionConfig(LabelSmoothedCrossEntropyCriterionConfig):
    phrase_tag_weight: float = field(default=0.001, metadata={"help": "lambda, the weight of the phrase-tag loss"})


def level_targets(phrase_tags, levels):
    """The tags of tree level `levels` (B x M), or of the levels of a tuple (n x B x M)."""
    if isinstance(levels, int):
        return phrase_tags[levels - 1]
    if list(levels) == list(range(levels[0], levels[0] + len(levels))):
        return phrase_tags[levels[0] - 1:levels[0] - 1 + len(levels)]
    return torch.stack([phrase_tags[k - 1] for k in levels])


def phrase_tag_loss(tag_logits, phrase_tags, pad: int, unk: int = None):
    """(summed loss, correct, phrases) over [(level, B x P x tags logits, partition)], entries
    that may also be (levels, n x B x P x tags logits, partitions): several levels at once, in
    one set of operations; phrase_tags: L x B x M tag ids, right-padded with `pad`; `unk` tags
    are not supervised."""
    if unk is not None:
        phrase_tags = phrase_tags.masked_fill(phrase_tags.eq(unk), pad)
    sums = []
    for levels, logits, _ in tag_logits:
        target = level_targets(phrase_tags, levels)  # (n x) B x M
        P, M = logits.size(-2), target.size(-1)
        target = F.pad(target, (0, P - M), value=pad) if M < P else target[..., :P]
        logits = logits.reshape(-1, logits.size(-1)).float()
        target = target.reshape(-1)
        real = target.ne(pad)
        sums.append((F.cross_entropy(logits, target, ignore_index=pad, reduction="sum"),
                     (logits.argmax(-1).eq(target) & real).sum(), real.sum()))
    if not sums:
        return 0, 0, 0
    # summed as Python adds them: one entry (one MG-SA layer) adds nothing
    return tuple(sum(column[1:], column[0]) for column in zip(*sums))


@register_criterion("label_smoothed_cross_entropy_with_phrase_tags", dataclass=PhraseTagCriterionConfig)
class LabelSmoothedCrossEntropyWithPhraseTags(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, phrase_tag_weight, ignore_prefix_size=0,
                 report_accuracy=False):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        self.phrase_tag_weight = phrase_tag_weight
        tags = getattr(task, "tag_dictionary", None)
        self.tag_pad = tags.pad() if tags is not None else None
        self.tag_unk = tags.unk() if tags is not None else None

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        loss, nll_loss = self.compute_loss(model, net_output, sample, reduce=reduce)
        sample_size = sample["target"].size(0) if self.sentence_avg else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        tag_logits = net_output[1].get("phrase_tag_logits") or []
        if tag_logits and "phrase_tags" in sample:
            tag_loss, correct, count = phrase_tag_loss(tag_logits, sample["phrase_tags"], self.tag_pad, self.tag_unk)
            loss = loss + self.phrase_tag_weight * tag_loss
            logging_output["loss"] = loss.data
            logging_output["tag_loss"] = tag_loss.data
            # tensors, as fairseq keeps loss.data: no host sync between forward and backward
            logging_output["tag_correct"] = correct.data
            logging_output["tag_count"] = count.data
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils.item(n_correct.data)
            logging_output["total"] = utils.item(total.data)
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        count = utils.item(sum(log.get("tag_count", 0) for log in logging_outputs))
        if count > 0:
            tag_loss = utils.item(sum(log.get("tag_loss", 0) for log in logging_outputs))
            correct = utils.item(sum(log.get("tag_correct", 0) for log in logging_outputs))
            metrics.log_scalar("tag_loss", tag_loss / count / math.log(2), count, round=3)
            metrics.log_scalar("tag_accuracy", 100.0 * correct / count, count, round=2)
