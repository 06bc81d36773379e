"""The partition: the paper's example, and properties over random trees and segmentations."""

import random

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.preprocess.conftest import reference_levels
from mgsa_preprocess.align import SPM_SPACE
from mgsa_preprocess.binarize import PhraseJob, process_chunk
from mgsa_preprocess.partition import partition
from mgsa_preprocess.synthetic import Node
from mgsa_preprocess.trees import parse_tree

PAPER = "(ROOT (S (NP (NNP Bush)) (VP (VBD held) (NP (DT a) (NN talk)) (PP (IN with) (NP (NNP Sharon))))))"


def word_spans(levels):
    return [[(s, e) for _, s, e, _ in level] for level in levels]


def test_paper_example_two_levels():
    top, leaves = parse_tree(PAPER)
    assert leaves == "Bush held a talk with Sharon".split()
    levels = partition(top, 2)
    words = leaves
    as_text = [[" ".join(words[s:e]) for s, e in level] for level in word_spans(levels)]
    assert as_text == [["Bush", "held a talk with Sharon"],
                       ["Bush", "held", "a talk", "with Sharon"]]
    assert levels[1][2][0] == "NP"  # "a talk"
    assert [tag for tag, *_ in levels[0]] == ["NNP", "VP"]
    assert [tag for tag, *_ in levels[1]] == ["NNP", "VBD", "NP", "PP"]


def test_paper_example_third_level_and_beyond():
    top, _ = parse_tree(PAPER)
    levels = partition(top, 5)
    assert word_spans(levels)[2] == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    assert [tag for tag, *_ in levels[2]] == ["NNP", "VBD", "DT", "NN", "IN", "NNP"]
    assert levels[3] == levels[2] and levels[4] == levels[2]  # nothing left to split


# ---- random trees -------------------------------------------------------------------------------

PHRASES = ["S", "NP", "VP", "PP", "ADJP", "SBAR", "WHNP"]
POS = ["NN", "NNP", "VBD", "DT", "JJ", "IN", ".", ",", "PRP$", "-LRB-", "-RRB-", "``"]
# Words with what Moses and the PTB escape: a word and the form each file writes.
WORDS = [("dog", "dog", "dog"), ("ran", "ran", "ran"), ("the", "the", "the"), ("(", "-LRB-", "("),
         (")", "-RRB-", ")"), ("AT&T", "AT&T", "AT&amp;T"), ('"', "``", "&quot;"), ("1/2", "1\\/2", "1/2"),
         ("a<b", "a<b", "a&lt;b"), ("o'clock", "o'clock", "o&apos;clock"), ("extraordinarily", "extraordinarily",
                                                                           "extraordinarily")]
FUNCTION_TAGS = ["", "", "-SBJ", "-TMP", "-SBJ-1", "=2", "-LOC-CLR", "-3"]


@st.composite
def trees(draw, depth=0):
    """A random tree of synthetic.Node, leaves as (tree form, text form); -NONE- elements included."""
    if depth >= 4 or draw(st.integers(0, 9)) < 3:
        _, leaf, text = draw(st.sampled_from(WORDS))
        return Node(draw(st.sampled_from(POS)), (leaf, text))
    children = draw(st.lists(st.one_of(trees(depth=depth + 1), empty_elements()), min_size=1, max_size=4))
    return Node(draw(st.sampled_from(PHRASES)), children)


def empty_elements():
    trace = st.sampled_from(["*", "*T*-1", "0", "*U*", "*-2"]).map(lambda t: Node("-NONE-", (t, None)))
    return st.one_of(trace, trace.map(lambda n: Node("NP", [n])))


def is_leaf_pair(node):
    """Pre-terminals of the random trees hold a (tree form, text form) pair."""
    return isinstance(node.children, tuple)


def real_leaves(node):
    if is_leaf_pair(node):
        return [] if node.label == "-NONE-" else [node.children]
    return [w for c in node.children for w in real_leaves(c)]


def plain(node):
    """The tree with leaves as tree forms (what reference_levels needs)."""
    if is_leaf_pair(node):
        return Node(node.label, node.children[0])
    return Node(node.label, [plain(c) for c in node.children])


def bracketed(node, rng, depth=0, multiline=False):
    """PTB text: function tags on phrase labels, optionally one child per indented line."""
    if is_leaf_pair(node):
        return f"({node.label} {node.children[0]})"
    label = node.label + rng.choice(FUNCTION_TAGS)
    sep = ("\n" + "  " * (depth + 1)) if multiline else " "
    return f"({label} " + sep.join(bracketed(c, rng, depth + 1, multiline) for c in node.children) + ")"


def segment(text_words, pieces, style):
    """Segment the words' text forms into the given numbers of pieces (character splits)."""
    out = []
    for w, n in zip(text_words, pieces):
        n = min(n, len(w))
        cuts = [len(w) * i // n for i in range(n + 1)]
        parts = [w[cuts[i]:cuts[i + 1]] for i in range(n)]
        if style == "bpe":
            out += [p + "@@" for p in parts[:-1]] + [parts[-1]]
        else:
            out += [SPM_SPACE + parts[0]] + parts[1:]
    return " ".join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(), seed=st.integers(0, 2**31), wrap=st.sampled_from(["", "( {} )", "(ROOT {})", "(TOP {})"]),
       multiline=st.booleans(), style=st.sampled_from(["bpe", "sentencepiece"]), levels=st.integers(1, 5),
       data=st.data())
def test_random_trees_and_segmentations(tree, seed, wrap, multiline, style, levels, data):
    leaves = real_leaves(tree)
    assume(leaves)
    rng = random.Random(seed)
    pieces = data.draw(st.lists(st.integers(1, 4), min_size=len(leaves), max_size=len(leaves)))
    pieces = [min(n, len(text)) for n, (_, text) in zip(pieces, leaves)]
    line = segment([text for _, text in leaves], pieces, style) + "\n"
    text = bracketed(tree, rng, 0, multiline)
    if wrap:
        text = wrap.format(text)

    res = process_chunk(PhraseJob("src", "tree", levels=levels, style=style), [(1, line, 1, text)])

    expected = reference_levels(plain(tree), levels)
    n_sub = sum(pieces)
    assert list(res["ntok"]) == [n_sub]
    names = res["tag_names"]
    previous_bounds = None
    for k in range(levels):
        m = int(res["n_phrases"][k][0])
        lens = res["lens"][k].tolist()
        tags = [names[i] for i in res["tags"][k].tolist()]
        assert m == len(lens) == len(tags) == len(expected[k])
        # exact spans and tags against the independent reference
        assert lens == [sum(pieces[s:e]) for s, e, _ in expected[k]]
        assert tags == [t for _, _, t in expected[k]]
        # contiguous, in order, covering every subword once: positive lengths summing to the line
        assert all(n > 0 for n in lens) and sum(lens) == n_sub
        bounds = set()
        pos = 0
        for n in lens:
            pos += n
            bounds.add(pos)
        # level k+1 refines level k: every boundary of k is a boundary of k+1
        if previous_bounds is not None:
            assert previous_bounds <= bounds
        previous_bounds = bounds


def test_synthetic_lines_of_several_sentences():
    """generate(..., sentences_per_line=3): one line is three grammar sentences in a row, its
    tree their three S under one S (level 1 = the sentences), its target their translations."""
    from mgsa_preprocess.synthetic import generate

    singles = generate(4, 9)
    for src, tgt, tree in generate(4, 9, sentences_per_line=3):
        top, leaves = parse_tree(tree)
        assert leaves == src.split()
        level1 = partition(top, 1)[0]
        assert [n[0] for n in level1] == ["S", "S", "S"]
        assert src.count(" . ") + src.endswith(" .") == 3 and tgt.count(" . ") + tgt.endswith(" .") == 3
    assert generate(4, 9, sentences_per_line=1) == singles  # the default corpus is unchanged
