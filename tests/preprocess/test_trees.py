"""Reading and normalising trees in real Penn Treebank form (trees written for these tests)."""

import io

import pytest

from mgsa_preprocess.errors import BadTree, PreprocessError
from mgsa_preprocess.partition import partition
from mgsa_preprocess.trees import TreeStats, canonical_token, check_leaves, iter_tree_texts, parse_tree, strip_label

# Multi-line, unlabeled outer bracket, function tags and indices, a co-indexed
# empty subject whose NP is left empty, a PP-CLR: the WSJ .mrg layout.
PTB_CONTROL = """\
( (S
    (NP-SBJ-1 (NNP Maria) (NNP Lopez) )
    (VP (VBD declined)
      (S
        (NP-SBJ (-NONE- *-1) )
        (VP (TO to)
          (VP (VB comment)
            (PP-CLR (IN on)
              (NP (DT the) (NN deal) ))))))
    (. .) ))
"""

# Escaped brackets, quote marks, an escaped slash, an ampersand, a trace with an
# index and a topicalised S with its index.
PTB_ESCAPES = """\
( (S-TPC-2
    (`` ``)
    (NP-SBJ (NNP Hartwell) (-LRB- -LRB-) (NNP Ltd.) (-RRB- -RRB-) )
    (VP (VBD sold)
      (NP (CD 1\\/2) (PP (IN of) (NP (NNP B&Q) )))
      (NP-TMP (-NONE- *T*-3) ))
    ('' '')
    (. .) ))
"""
ESCAPES_SOURCE = "&quot; Hartwell ( Ltd. ) sold 1/2 of B&amp;Q &quot; ."


def spans(levels):
    return [[(s, e, tag) for tag, s, e, _ in level] for level in levels]


def test_ptb_control_tree_normalised_and_partitioned():
    stats = TreeStats()
    top, leaves = parse_tree(PTB_CONTROL, "wsj.mrg", 1, stats)
    assert leaves == "Maria Lopez declined to comment on the deal .".split()
    assert top[0] == "S" and (top[1], top[2]) == (0, 9)
    assert spans(partition(top, 3)) == [
        [(0, 2, "NP"), (2, 8, "VP"), (8, 9, ".")],
        # the embedded S keeps its label; its empty subject is gone, so it has one child
        [(0, 1, "NNP"), (1, 2, "NNP"), (2, 3, "VBD"), (3, 8, "S"), (8, 9, ".")],
        [(0, 1, "NNP"), (1, 2, "NNP"), (2, 3, "VBD"), (3, 8, "VP"), (8, 9, ".")],
    ]
    assert stats.as_dict() == {"none_removed": 1, "emptied_removed": 1, "function_tags_stripped": 3,
                               "outer_removed": 1}


def test_ptb_escapes_match_moses_escaped_text():
    stats = TreeStats()
    top, leaves = parse_tree(PTB_ESCAPES, "wsj.mrg", 12, stats)
    assert leaves == ["``", "Hartwell", "-LRB-", "Ltd.", "-RRB-", "sold", "1\\/2", "of", "B&Q", "''", "."]
    words = ESCAPES_SOURCE.split()
    # every leaf that differs from its word is an escape of the same text
    assert check_leaves(leaves, words, "wsj.mrg", 12, "train.en", 3) == 6
    assert top[0] == "S"  # S-TPC-2 -> S
    assert spans(partition(top, 2)) == [
        [(0, 1, "``"), (1, 5, "NP"), (5, 9, "VP"), (9, 10, "''"), (10, 11, ".")],
        [(0, 1, "``"), (1, 2, "NNP"), (2, 3, "-LRB-"), (3, 4, "NNP"), (4, 5, "-RRB-"), (5, 6, "VBD"),
         (6, 9, "NP"), (9, 10, "''"), (10, 11, ".")],
    ]
    assert stats.none_removed == 1 and stats.emptied_removed == 1


def test_iter_tree_texts_multiline_file_with_line_numbers():
    text = "\n" + PTB_CONTROL + "\n\n" + PTB_ESCAPES + "(ROOT (FRAG (NN Yes) (. !)))\n"
    trees = list(iter_tree_texts(io.StringIO(text), "f.mrg"))
    assert [line for line, _ in trees] == [2, 14, 22]
    assert trees[0][1] == PTB_CONTROL and trees[1][1] == PTB_ESCAPES
    top, leaves = parse_tree(trees[2][1])
    assert leaves == ["Yes", "!"] and spans(partition(top, 3)) == [[(0, 1, "NN"), (1, 2, ".")]] * 3


@pytest.mark.parametrize("label,tag", [("NP-SBJ-1", "NP"), ("NP=2", "NP"), ("PP-LOC-CLR", "PP"), ("S-TPC-2", "S"),
                                       ("-LRB-", "-LRB-"), ("-NONE-", "-NONE-"), ("PRP$", "PRP$"), ("-", "-"),
                                       ("NP-SBJ=3", "NP"), ("WHNP-1", "WHNP"), (",", ",")])
def test_strip_label(label, tag):
    assert strip_label(label) == tag


@pytest.mark.parametrize("text,expected", [
    ("(ROOT (S (NP (NNP Ann)) (VP (VBD left))))", [[(0, 1, "NNP"), (1, 2, "VBD")]] * 2),
    ("(TOP (S (NP (NNP Ann)) (VP (VBD left))))", [[(0, 1, "NNP"), (1, 2, "VBD")]] * 2),
    ("(S (NP (NNP Ann)) (VP (VBD left)))", [[(0, 1, "NNP"), (1, 2, "VBD")]] * 2),
    # a one-word sentence: its pre-terminal, at every level, whatever wraps it
    ("( (NP (NN Yes)) )", [[(0, 1, "NN")]] * 2),
    ("(ROOT (INTJ (UH Yes)))", [[(0, 1, "UH")]] * 2),
    # a unary top over several words: level 1 is its single child
    ("(ROOT (S (VP (VB Go) (ADVP (RB home)))))", [[(0, 2, "VP")], [(0, 1, "VB"), (1, 2, "RB")]]),
    # an outer bracket holding two constituents is the top itself
    ("( (S (NP (PRP It)) (VP (VBD rained))) (. .) )", [[(0, 2, "S"), (2, 3, ".")],
                                                        [(0, 1, "PRP"), (1, 2, "VBD"), (2, 3, ".")]]),
])
def test_outer_brackets_and_single_words(text, expected):
    top, _ = parse_tree(text)
    assert spans(partition(top, 2)) == expected


def test_empty_trees():
    for text in ("()", "(ROOT)", "(ROOT (S (-NONE- *)))"):
        top, leaves = parse_tree(text)
        assert top is None and leaves == []
        assert partition(top, 3) == [[], [], []]


@pytest.mark.parametrize("text,fragment", [
    ("(S (NP a talk) (VP (VBD held)))", "beside other"),
    ("(S (NP (DT a) talk))", "beside other"),
    ("(S (NP (DT a)) (NN))", "empty constituent (NN)"),
    ("(S ((DT a) (NN b)) (VBD c))", "unlabeled constituent"),
])
def test_malformed_trees_are_bad_trees(text, fragment):
    with pytest.raises(BadTree) as e:
        parse_tree(text, "t.tree", 7)
    assert fragment in str(e.value) and str(e.value).startswith("t.tree:7: ")


@pytest.mark.parametrize("text,fragment", [
    ("(S (NP (DT a)) (VBD b)) (S (NN c))", "two trees on one line"),
    ("(S (NP (DT a)) (VBD b)", "not closed"),
    ("(S (NP (DT a))) (VBD b))", "two trees on one line"),
    ("word (S (NN a))", "outside"),
])
def test_structural_errors_are_fatal(text, fragment):
    with pytest.raises(PreprocessError) as e:
        parse_tree(text, "t.tree", 4)
    assert not isinstance(e.value, BadTree)  # --lenient cannot repair these
    assert fragment in str(e.value) and "t.tree:4" in str(e.value)


def test_unbalanced_brackets_name_the_line():
    missing = "(S (NN a))\n( (S (NN b)\n    (VBD c))\n\n(S (NN d))\n"
    with pytest.raises(PreprocessError) as e:
        list(iter_tree_texts(io.StringIO(missing), "t.tree"))
    assert str(e.value).startswith("t.tree:2: unbalanced bracket")
    extra = "(S (NN a))\n(S (NN b)))\n(S (NN d))\n"
    with pytest.raises(PreprocessError) as e:
        list(iter_tree_texts(io.StringIO(extra), "t.tree"))
    assert str(e.value).startswith("t.tree:2: unbalanced bracket")
    extra_later = "(S\n  (NN b)))\n"
    with pytest.raises(PreprocessError) as e:
        list(iter_tree_texts(io.StringIO(extra_later), "t.tree"))
    assert str(e.value).startswith("t.tree:2: unbalanced bracket") and "starts at line 1" in str(e.value)
    with pytest.raises(PreprocessError) as e:
        list(iter_tree_texts(io.StringIO("(S (NN a))\nplain text\n"), "t.tree"))
    assert str(e.value).startswith("t.tree:2: text outside any bracketed tree")


def test_leaf_mismatch_names_both_files():
    _, leaves = parse_tree("(S (NP (NNP Bush)) (VP (VBD held) (NP (DT a) (NN talk))))")
    with pytest.raises(BadTree) as e:
        check_leaves(leaves, "Bush held the talk".split(), "t.tree", 5, "train.en", 5)
    assert str(e.value) == ("t.tree:5: the tree's leaves differ from the words of train.en:5 at word 3: "
                            "leaf 'a', word 'the'")
    with pytest.raises(BadTree) as e:
        check_leaves(leaves, "Bush held a talk .".split(), "t.tree", 5, "train.en", 5)
    assert "4 leaves" in str(e.value) and "5 words" in str(e.value)


@pytest.mark.parametrize("a,b", [("-LRB-", "("), ("-RCB-", "}"), ("``", '"'), ("''", "&quot;"), ("&amp;", "&"),
                                 ("AT&amp;T", "AT&T"), ("&#124;", "|"), ("&lt;b&gt;", "<b>"), ("1\\/2", "1/2"),
                                 ("\\*", "*"), (":-LRB-", ":("), ("&apos;s", "'s"), ("&#91;", "-LSB-"),
                                 ("@-@", "-")])
def test_canonical_token_equates_escapes(a, b):
    assert canonical_token(a) == canonical_token(b)


def test_canonical_token_keeps_real_differences():
    assert canonical_token("&amp;lt") == "&lt"  # not an entity once unescaped: stays
    assert canonical_token("(") != canonical_token(")")
    assert canonical_token("talk") == "talk"


def test_agrees_with_stanza_reader():
    """stanza's reader, with its own -NONE- pruning and label simplification, sees the same tree."""
    tree_reader = pytest.importorskip("stanza.models.constituency.tree_reader")
    texts = [PTB_CONTROL, PTB_ESCAPES, "(ROOT (S (NP (NNP Ann)) (VP (VBD left) (NP (-NONE- *)))))"]
    for text in texts:
        (st,) = tree_reader.read_trees(text, use_tqdm=False)
        st = st.prune_none().simplify_labels()
        while st.label in ("ROOT", "TOP") and len(st.children) == 1 and not st.is_preterminal():
            st = st.children[0]

        def collapse(t, start):
            words = len(t.leaf_labels())
            if words == 1:
                node = t
                while not node.is_preterminal():
                    (node,) = node.children
                return (node.label, start, start + 1, None)
            kids, s = [], start
            for c in t.children:
                kids.append(collapse(c, s))
                s += len(c.leaf_labels())
            return (t.label, start, start + words, kids)

        top, leaves = parse_tree(text)
        assert top == collapse(st, 0)
        # stanza's reader undoes -LRB-/-RRB-; this reader keeps the leaf as written
        assert [canonical_token(w) for w in leaves] == [canonical_token(w) for w in st.leaf_labels()]
