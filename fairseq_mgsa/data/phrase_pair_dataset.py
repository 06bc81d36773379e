"""A LanguagePairDataset that also carries the source's phrase files (one per tree level).

Phrase file format (written by mgsa-preprocess): for level k, the fairseq indexed
dataset `{split}.{src}-{tgt}.{src}.syn{k}` holds, for every source line in order,
`[len_1 .. len_M, tag_1 .. tag_M]`: the length in subword tokens and the tag id of
each phrase. The lengths cover the line's tokens without the end-of-sentence token,
which the model treats as a phrase of its own.

A batch gets, beside fairseq's usual fields:

    net_input["src_phrase_lengths"]  L x B x M   phrase lengths per level, right-padded with 0
    net_input["src_phrase_counts"]   L x B       phrases per level (without the EOS phrase)
    sample["phrase_tags"]            L x B x M   tag ids, padded with the tag dictionary's pad

Filtering, ordering, batching and sharding are the wrapped dataset's (fairseq's).
"""

from typing import List

import torch
from fairseq.data import BaseWrapperDataset

from ..errors import MGSAError


class PhrasePairDataset(BaseWrapperDataset):
    def __init__(self, dataset, levels: List, tag_pad: int, name: str, truncated: bool = False):
        """dataset: fairseq LanguagePairDataset; levels: indexed datasets syn1..synL;
        name: the phrase files' prefix, for error messages; truncated: the source was cut
        by --truncate-source, so phrases past the cut are clipped to match."""
        super().__init__(dataset)
        for k, level in enumerate(levels, 1):
            if len(level) != len(dataset):
                raise MGSAError(f"{name}.syn{k}: {len(level)} sentences, but the source binaries hold "
                                f"{len(dataset)}; phrase files must be made from the same text (mgsa-preprocess)")
        self.levels = levels
        self.tag_pad = tag_pad
        self.name = name
        self.truncated = truncated

    def phrases(self, index: int, num_tokens: int):
        """[(lengths, tags)] per level for sentence `index` of `num_tokens` tokens without EOS."""
        out = []
        for k, level in enumerate(self.levels, 1):
            item = level[index].long()
            m = len(item) // 2
            lengths, tags = item[:m], item[m:]
            covered = int(lengths.sum())
            if covered != num_tokens:
                if self.truncated and covered > num_tokens:
                    lengths, tags = clip_phrases(lengths, tags, num_tokens)
                else:
                    raise MGSAError(
                        f"{self.name}.syn{k}, sentence {index + 1}: the phrases cover {covered} tokens but the "
                        f"source has {num_tokens}; phrase files must be made from the same (BPE) text")
            out.append((lengths, tags))
        return out

    def __getitem__(self, index):
        item = self.dataset[index]
        item["phrases"] = self.phrases(index, len(item["source"]) - 1)
        return item

    def collater(self, samples):
        batch = self.dataset.collater(samples)
        if len(samples) == 0 or "net_input" not in batch:
            return batch
        by_id = {s["id"]: s["phrases"] for s in samples}
        # fairseq's collater reorders by source length
        add_phrases(batch, [by_id[i] for i in batch["id"].tolist()], self.tag_pad)
        return batch


def add_phrases(batch, phrases, tag_pad: int):
    """Put the phrase tensors of `phrases` (per sentence, in batch order: [(lengths, tags)]
    per level) into a fairseq batch (see the module docstring)."""
    L, B = len(phrases[0]), len(phrases)
    M = max(len(lengths) for sentence in phrases for lengths, _ in sentence)
    lengths = torch.zeros(L, B, M, dtype=torch.long)
    counts = torch.zeros(L, B, dtype=torch.long)
    tags = torch.full((L, B, M), tag_pad, dtype=torch.long)
    for b, sentence in enumerate(phrases):
        for k, (lens, tgs) in enumerate(sentence):
            lengths[k, b, :len(lens)] = torch.as_tensor(lens)
            tags[k, b, :len(tgs)] = torch.as_tensor(tgs)
            counts[k, b] = len(lens)
    device = batch["net_input"]["src_tokens"].device
    batch["net_input"]["src_phrase_lengths"] = lengths.to(device)
    batch["net_input"]["src_phrase_counts"] = counts.to(device)
    batch["phrase_tags"] = tags.to(device)


def clip_phrases(lengths, tags, num_tokens: int):
    """Keep the phrases inside the first `num_tokens` tokens; shorten the one that is cut."""
    ends = lengths.cumsum(0)
    keep = int((ends < num_tokens).sum()) + 1  # phrases that start before the cut
    lengths = lengths[:keep].clone()
    lengths[-1] -= int(ends[keep - 1]) - num_tokens
    return lengths, tags[:keep]
