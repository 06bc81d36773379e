"""Word boundaries of segmented text, and word spans -> subword spans."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mgsa_preprocess.align import SPM_SPACE, cumulative, split_words, subword_lengths


def test_bpe_words_and_piece_counts():
    words, counts = split_words("Bu@@ sh held a tal@@ k wi@@ t@@ h Sharon\n")
    assert words == ["Bush", "held", "a", "talk", "with", "Sharon"]
    assert counts == [2, 1, 1, 2, 3, 1]


def test_unsegmented_and_whitespace_like_fairseq():
    # fairseq splits tokens on any run of whitespace; so does split_words
    assert split_words("  a\tb  c \n") == (["a", "b", "c"], None)
    assert split_words("a@@ b", style="none") == (["a@@", "b"], None)


def test_custom_separator():
    assert split_words("ta## lk", separator="##") == (["talk"], [2])


def test_sentencepiece():
    words, counts = split_words(f"{SPM_SPACE}Bu sh {SPM_SPACE}held {SPM_SPACE}( {SPM_SPACE} ) {SPM_SPACE}a", "sentencepiece")
    assert words == ["Bush", "held", "(", ")", "a"]
    assert counts == [2, 1, 1, 2, 1]


def test_dangling_separator_is_an_error():
    with pytest.raises(ValueError, match="ends with the BPE separator"):
        split_words("a b@@\n")


def test_subword_lengths():
    cum = cumulative([2, 1, 1, 2, 3, 1])
    assert cum == [0, 2, 3, 4, 6, 9, 10]
    nodes = [("NP", 0, 1, None), ("VBD", 1, 2, None), ("NP", 2, 4, []), ("PP", 4, 6, [])]
    assert subword_lengths(nodes, cum) == [2, 1, 3, 4]
    assert subword_lengths(nodes, None) == [1, 1, 2, 2]


@given(st.lists(st.tuples(st.text("abcdé&;", min_size=1, max_size=6), st.integers(1, 4)), min_size=1, max_size=12))
def test_bpe_round_trip(words_pieces):
    """Any segmentation of any words gives back the words and their piece counts."""
    pieces, words, counts = [], [], []
    for w, n in words_pieces:
        n = min(n, len(w))
        cuts = [len(w) * i // n for i in range(n + 1)]
        parts = [w[cuts[i]:cuts[i + 1]] for i in range(n)]
        pieces += [p + "@@" for p in parts[:-1]] + [parts[-1]]
        words.append(w)
        counts.append(n)
    got_words, got_counts = split_words(" ".join(pieces))
    assert got_words == words
    assert (got_counts or [1] * len(words)) == counts
