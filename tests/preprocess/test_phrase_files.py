"""The phrase-file contract (mgsa_preprocess.phrase_files) that the writer and the task share:
the items' layout against one written item by item, and the round trip through the reader's decoding."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mgsa_preprocess.phrase_files import (ITEM_DTYPE, decode_item, encode_items, is_tag_dictionary, phrase_prefix,
                                          tag_dictionary_path)

# items: per line, its phrases as (length, tag) pairs; a line may have none
lines = st.lists(st.lists(st.tuples(st.integers(1, 50), st.integers(0, 99)), max_size=6), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(lines)
def test_items_are_lengths_then_tags_line_by_line(phrases):
    n = np.array([len(p) for p in phrases])
    lengths = np.array([length for p in phrases for length, _ in p], dtype=np.int64)
    tags = np.array([tag for p in phrases for _, tag in p], dtype=np.int64)
    out = encode_items(n, lengths, tags)
    expected = [x for p in phrases for x in [length for length, _ in p] + [tag for _, tag in p]]
    assert out.dtype == ITEM_DTYPE and out.tolist() == expected
    # the reader splits each line's item back into its lengths and tags
    start = 0
    for p in phrases:
        item = out[start:start + 2 * len(p)]
        start += len(item)
        got_lengths, got_tags = decode_item(item)
        assert got_lengths.tolist() == [length for length, _ in p] and got_tags.tolist() == [tag for _, tag in p]


def test_file_names():
    assert phrase_prefix("bin/train.de-en.de", 2) == "bin/train.de-en.de.syn2"
    assert tag_dictionary_path("bin", "de") == "bin/dict.de.tags.txt"
    assert is_tag_dictionary("dict.de.tags.txt") and not is_tag_dictionary("dict.de.txt")
