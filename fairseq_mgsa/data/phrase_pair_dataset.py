"""A LanguagePairDataset that also carries the source's phrase files (one per tree level).

The phrase files, the tag dictionary and the report beside them are mgsa-preprocess's
(their format: preprocess/phrase_files.py, imported as mgsa_preprocess.phrase_files).

A batch gets, beside fairseq's usual fields:

    net_input["src_phrase_lengths"]  L x B x M   phrase lengths per level, right-padded with 0
    net_input["src_phrase_counts"]   L x B       phrases per level (without the EOS phrase)
    sample["phrase_tags"]            L x B x M   tag ids, padded with the tag dictionary's pad

Filtering, ordering, batching and sharding are the wrapped dataset's (fairseq's).

Damaged or mismatched phrase files are one-line errors naming the file, never a
traceback or a silently wrong batch: a file whose .bin and .idx do not fit together
(truncated, or an .idx of another file) when it is opened; phrase files of another
text or BPE (the phrases do not cover the sentence's tokens), and a tag dictionary
that is not the one the files were written with, when opened for a sample of
sentences and for every sentence when it is first batched.
"""

import os
import struct
from typing import List, Optional

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset, data_utils
from fairseq.data.indexed_dataset import MMapIndexedDataset, data_file_path, index_file_path
from mgsa_preprocess.phrase_files import ITEM_DTYPE, REPORT, decode_item, phrase_prefix, written_tag_symbols

from ..errors import MGSAError

CHECKED_AT_LOAD = 512  # sentences whose phrases are checked when the files are opened


def check_mmap_index(idx: str, data: str):
    """Check an mmap .idx's length and the .bin's presence before fairseq opens them.

    Done by hand because fairseq's reader fails on a short .idx or an empty .bin with
    an exception raised half-way through its constructor, after which its __del__
    prints a second traceback at garbage collection. The layout read here is the one
    MMapIndexedDataset.Index.writer writes: magic (9 bytes), version (8), dtype code
    (1), item count n (8), then n int32 sizes and n int64 pointers.
    """
    magic = MMapIndexedDataset.Index._HDR_MAGIC
    with open(idx, "rb") as f:
        header = f.read(len(magic) + 17)
    if not header.startswith(magic[:len(header)]) or len(header) < len(magic) + 17:
        if header.startswith(magic[:len(header)]):
            raise MGSAError(f"{idx}: {len(header)} bytes, shorter than an index header: the file is truncated")
        return  # another fairseq format (or not an index at all): fairseq's reader says which
    n = struct.unpack("<Q", header[len(magic) + 9:])[0]
    expected = len(magic) + 17 + 12 * n
    actual = os.path.getsize(idx)
    if actual != expected:
        raise MGSAError(f"{idx}: {actual} bytes, but an index of {n} sentences has {expected}: the file is "
                        f"{'truncated' if actual < expected else 'damaged'}; run mgsa-preprocess again")
    if n and os.path.getsize(data) == 0:
        raise MGSAError(f"{data}: empty, but its index {idx} describes {n} sentences: the file is truncated")


def load_phrase_file(path: str, dataset_impl: Optional[str] = None):
    """Open one level's phrase file `path`.bin/.idx and check that the two fit together."""
    idx, data = index_file_path(path), data_file_path(path)
    if dataset_impl in (None, "mmap"):
        check_mmap_index(idx, data)
    try:
        dataset = data_utils.load_indexed_dataset(path, None, dataset_impl)
    except (AssertionError, ValueError, OSError, KeyError, IndexError) as e:
        raise MGSAError(f"{idx}: cannot read this phrase file ({type(e).__name__}: {e}); it is damaged or not "
                        f"written by mgsa-preprocess: run mgsa-preprocess again") from None
    if dataset is None:
        raise MGSAError(f"{path}.bin/.idx: cannot open this phrase file (--dataset-impl {dataset_impl})")
    if not isinstance(dataset, MMapIndexedDataset):
        return dataset  # other fairseq formats carry no byte count to check against
    index = dataset._index
    if index.dtype != ITEM_DTYPE:
        raise MGSAError(f"{idx}: items of type {np.dtype(index.dtype).name}, but phrase files hold "
                        f"{np.dtype(ITEM_DTYPE).name} [lengths, tags]: is this a token file, or an .idx of "
                        f"another file?")
    sizes = index.sizes
    odd = np.flatnonzero(sizes % 2)
    if len(odd):
        raise MGSAError(f"{idx}: sentence {odd[0] + 1} has {sizes[odd[0]]} values, but a phrase item is "
                        f"[lengths, tags], an even number: the .idx belongs to another file")
    expected = int(index._pointers[-1]) + 4 * int(sizes[-1]) if len(sizes) else 0
    actual = os.path.getsize(data)
    if actual != expected:
        raise MGSAError(f"{data}: {actual} bytes, but its index {idx} describes {expected} "
                        f"({'truncated' if actual < expected else 'the .idx belongs to another file'}): "
                        f"run mgsa-preprocess again")
    return dataset


class PhrasePairDataset(BaseWrapperDataset):
    def __init__(self, dataset, levels: List, tag_pad: int, name: str, truncated=False,
                 tag_dictionary=None, tag_dictionary_path: str = "the tag dictionary"):
        """dataset: fairseq LanguagePairDataset; levels: indexed datasets syn1..synL;
        name: the phrase files' prefix, for error messages; truncated: the number of tokens
        (EOS excluded) --truncate-source cuts sources at (True: unknown), so that phrases
        past the cut of a cut sentence are clipped to match (False: no cut);
        tag_dictionary: the task's, checked against the phrase files' tag ids."""
        super().__init__(dataset)
        for k, level in enumerate(levels, 1):
            if len(level) != len(dataset):
                raise MGSAError(f"{phrase_prefix(name, k)}: {len(level)} sentences, but the source binaries hold "
                                f"{len(dataset)}; phrase files must be made from the same text (mgsa-preprocess)")
        self.levels = levels
        self.tag_pad = tag_pad
        self.name = name
        self.truncated = truncated
        self.num_tags = None if tag_dictionary is None else len(tag_dictionary)
        self.tag_dictionary_path = tag_dictionary_path
        if tag_dictionary is not None:
            written = written_tag_symbols(os.path.dirname(name) or ".")
            if written is not None and written != list(tag_dictionary.symbols):
                raise MGSAError(f"{tag_dictionary_path}: not the tag dictionary the phrase files "
                                f"{phrase_prefix(name, '*')} were written with (see {REPORT} beside them): "
                                f"tag ids would mean other tags")
        self.check_sample()

    def check_sample(self):
        """Check the phrases of some sentences (the first ones and a spread) when the files are opened."""
        n = len(self.dataset)
        if n == 0:
            return
        sample = np.unique(np.concatenate([np.arange(min(n, CHECKED_AT_LOAD // 2)),
                                           np.linspace(0, n - 1, CHECKED_AT_LOAD // 2).astype(np.int64)]))
        # the tokens themselves, not src_sizes: under --truncate-source fairseq's sizes count
        # one token too many for sentences that were not cut (StripTokenDataset keeps the sizes)
        for i in sample.tolist():
            self.phrases(i, len(self.dataset.src[i]) - 1)

    def phrases(self, index: int, num_tokens: int):
        """[(lengths, tags)] per level for sentence `index` of `num_tokens` tokens without EOS."""
        out = []
        for k, level in enumerate(self.levels, 1):
            lengths, tags = decode_item(level[index].long())
            m = len(lengths)
            where = f"{phrase_prefix(self.name, k)}, sentence {index + 1}"
            if m and int(lengths.min()) < 1:
                raise MGSAError(f"{where}: a phrase of length {int(lengths.min())}: the phrase file is damaged; "
                                f"run mgsa-preprocess again")
            if m and (int(tags.min()) < 0 or (self.num_tags is not None and int(tags.max()) >= self.num_tags)):
                bad = int(tags.min()) if int(tags.min()) < 0 else int(tags.max())
                raise MGSAError(f"{where}: tag id {bad}, but {self.tag_dictionary_path} has {self.num_tags} "
                                f"entries: not the tag dictionary the phrase files were written with")
            covered = int(lengths.sum())
            if covered != num_tokens:
                if covered > num_tokens and self.is_cut(num_tokens):
                    lengths, tags = clip_phrases(lengths, tags, num_tokens)
                else:
                    raise MGSAError(f"{where}: the phrases cover {covered} tokens but the source has {num_tokens}; "
                                    f"phrase files must be made from the same (BPE) text")
            out.append((lengths, tags))
        return out

    def is_cut(self, num_tokens: int) -> bool:
        """Whether a sentence of `num_tokens` tokens (EOS excluded) may have been cut by --truncate-source."""
        if self.truncated is True:  # the cut is unknown: the longest sentences may have been cut
            return num_tokens + 1 >= int(self.dataset.src_sizes.max())
        return bool(self.truncated) and num_tokens == self.truncated

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
