"""The phrase files: what mgsa-preprocess writes and fairseq_mgsa's task reads.

Beside fairseq's binaries of a split's source, prefix P = {destdir}/{split}.{src}-{tgt}.{src}:

* ``P.syn{k}.bin/.idx``, k = 1 .. levels: level k of every source line's tree, a fairseq
  mmap indexed dataset of int32 items, one per line in order: ``[len_1 .. len_M, tag_1 .. tag_M]``,
  where len_i is the number of subword tokens of phrase i (they sum to the line's token
  count, the end-of-sentence token excluded: the model makes it a phrase of its own) and
  tag_i the phrase's index in the tag dictionary;
* ``{destdir}/dict.{src}.tags.txt``: the tag dictionary, a fairseq Dictionary: its special
  symbols, then every tag of the train split, most frequent first (no threshold, no
  padding); a valid or test phrase whose tag the train split never had is written as <unk>;
* ``{destdir}/mgsa_preprocess_report.json``: the report, whose ``tag_symbols`` are the
  dictionary the tag ids were written with, for the reader to check its dictionary against.

This module is the one place that spells them: mgsa-preprocess writes through it (binarize,
cli, report, fairseq_options) and fairseq_mgsa reads through it (tasks/mgsa_translation.py,
data/phrase_pair_dataset.py). It imports nothing of either side, and fairseq only when a
dictionary is built.
"""

import json
import os
from typing import Dict, List, Optional, Tuple

import numpy as np

ITEM_DTYPE = np.int32
TAG_DICTIONARY_SUFFIX = ".tags.txt"
REPORT = "mgsa_preprocess_report.json"
REPORT_TEXT = "mgsa_preprocess_report.txt"
TAG_SYMBOLS = "tag_symbols"  # the report's entry: the tag dictionary's symbols, in id order


def phrase_prefix(prefix: str, level) -> str:
    """``P.syn{k}``: the phrase file of tree level k (1-based) beside fairseq's ``P.bin/.idx``;
    level "*" or "{k}" names them all in messages and the report."""
    return f"{prefix}.syn{level}"


def tag_dictionary_path(data_dir: str, src: str) -> str:
    return os.path.join(data_dir, f"dict.{src}{TAG_DICTIONARY_SUFFIX}")


def is_tag_dictionary(filename: str) -> bool:
    """Whether a data directory's file is a tag dictionary (beside fairseq's dict.{lang}.txt)."""
    return filename.startswith("dict.") and filename.endswith(TAG_DICTIONARY_SUFFIX)


def report_path(data_dir: str, text: bool = False) -> str:
    return os.path.join(data_dir, REPORT_TEXT if text else REPORT)


def build_tag_dictionary(tag_counts: Dict[str, int]):
    """The tag dictionary of a train split's tag counts: a class per tag, most frequent first."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for name, count in sorted(tag_counts.items(), key=lambda x: (-x[1], x[0])):
        d.add_symbol(name, n=count)
    d.finalize(threshold=-1, nwords=-1, padding_factor=1)
    return d


def written_tag_symbols(data_dir: str) -> Optional[List[str]]:
    """The tag dictionary's symbols as mgsa-preprocess recorded them in ``data_dir``, if it did."""
    try:
        with open(report_path(data_dir), encoding="utf-8") as f:
            return json.load(f).get(TAG_SYMBOLS)
    except (OSError, ValueError):
        return None


def item_layout(n_phrases: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Where the lengths and the tags of consecutive items' phrases stand in the items'
    concatenation (n_phrases: the phrases of each item), phrase by phrase."""
    before = np.repeat(np.cumsum(n_phrases) - n_phrases, n_phrases)  # phrases of the items before
    lengths_at = np.arange(int(np.sum(n_phrases))) + before  # 2 * before + rank in the item
    return lengths_at, lengths_at + np.repeat(n_phrases, n_phrases)


def encode_items(n_phrases: np.ndarray, lengths: np.ndarray, tags: np.ndarray) -> np.ndarray:
    """The concatenated items of consecutive lines, from their phrases' lengths and tags."""
    lengths_at, tags_at = item_layout(n_phrases)
    out = np.empty(2 * len(lengths), dtype=ITEM_DTYPE)
    out[lengths_at] = lengths
    out[tags_at] = tags
    return out


def decode_item(item):
    """(lengths, tags) of one line's item."""
    m = len(item) // 2
    return item[:m], item[m:]
