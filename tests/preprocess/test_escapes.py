"""Escapes as a class: a token and any escaped form of it compare equal, whatever
schemes produced the form and in whatever order; different plain tokens never do.

The schemes are written here from their definitions, independently of
``mgsa_preprocess.trees`` (which only undoes them): Moses' escape-special-chars, PTB's
bracket, quote and slash/star escapes, stanza's tree writer (checked against
stanza's own ``Tree.__format__`` where stanza is installed) and Moses'
aggressive hyphen splitting.
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mgsa_preprocess.errors import BadTree
from mgsa_preprocess.trees import canonical_token, check_leaves, parse_tree

MOSES = [("&", "&amp;"), ("|", "&#124;"), ("<", "&lt;"), (">", "&gt;"), ("'", "&apos;"), ('"', "&quot;"),
         ("[", "&#91;"), ("]", "&#93;")]
PTB_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}


def moses_escape(tok):
    # sacremoses' order: '&' first, so that its own output is not escaped again
    for ch, esc in MOSES:
        tok = tok.replace(ch, esc)
    return tok


def ptb_escape(tok, closing):
    """PTB: brackets and quotes as whole tokens, '/' and '*' inside tokens."""
    if tok in PTB_BRACKETS:
        return PTB_BRACKETS[tok]
    if tok == '"':
        return "''" if closing else "``"
    if tok == "'" and not closing:
        return "`"
    return tok.replace("/", "\\/").replace("*", "\\*")


def stanza_writer(tok):
    """What stanza's one-line tree format writes for a leaf: brackets inside the token escaped."""
    return tok.replace("(", "-LRB-").replace(")", "-RRB-")


def moses_aggressive(tok):
    return "@-@" if tok == "-" else tok


SCHEMES = {"moses": moses_escape, "ptb-open": lambda t: ptb_escape(t, False),
           "ptb-close": lambda t: ptb_escape(t, True), "stanza": stanza_writer, "moses-a": moses_aggressive}

# Every special character of the schemes, and letters/digits that entity names
# use. Not the capitals of -LRB- and friends: "-LRB)" and "(RRB-" both become
# "-LRB-RRB-" in stanza's writer, an ambiguity no comparison can resolve (tested below).
ALPHABET = "()[]{}\"'`/*\\&|<>;#@-" + "amptlq124"
ESCAPE_FORMS = re.compile(r"&(amp|#124|lt|gt|apos|quot|#91|#93);|-[LR][RCS]B-|\\[/*]")
WHOLE_TOKEN_FORMS = {"``", "''", "`", "@-@"}


def is_plain(tok):
    """A token that is not itself (and does not contain) the escaped form of anything."""
    return not ESCAPE_FORMS.search(tok) and tok not in WHOLE_TOKEN_FORMS


plain_tokens = st.text(st.sampled_from(ALPHABET), min_size=1, max_size=8).filter(is_plain)
# Whole-token cases a short random text rarely hits exactly.
plain_tokens = st.one_of(plain_tokens, st.sampled_from(['"', "'", "-", "(", ")", "[", "]", "{", "}", "&", "/"]))
compositions = st.lists(st.sampled_from(sorted(SCHEMES)), max_size=4)


def escaped(tok, schemes):
    for name in schemes:
        tok = SCHEMES[name](tok)
    return tok


@settings(max_examples=400, deadline=None)
@given(plain_tokens, compositions, compositions)
def test_any_two_escaped_forms_of_a_token_compare_equal(tok, schemes_a, schemes_b):
    a, b = escaped(tok, schemes_a), escaped(tok, schemes_b)
    assert canonical_token(a) == tok
    assert canonical_token(a) == canonical_token(b)
    check_leaves([a], [b], "t.tree", 1, "t.src", 1)  # the comparison mgsa-preprocess makes


@settings(max_examples=300, deadline=None)
@given(plain_tokens, plain_tokens, compositions, compositions)
def test_different_plain_tokens_never_compare_equal(x, y, schemes_a, schemes_b):
    if x == y:
        return
    a, b = escaped(x, schemes_a), escaped(y, schemes_b)
    assert canonical_token(a) != canonical_token(b)
    with pytest.raises(BadTree):
        check_leaves([a], [b], "t.tree", 1, "t.src", 1)


@pytest.mark.parametrize("leaf,word", [
    ("''", "&apos;&apos;"),       # the reported case: PTB closing quote, Moses-escaped PTB-tokenised text
    ("``", "&quot;"), ("''", '"'), ("`", "&apos;"),
    ("-LRB-", "("), ("-LSB-", "&#91;"), ("-RSB-", "&#93;"), ("-LCB-", "{"),
    ("AT&amp;T", "AT&T"), ("&lt;b&gt;", "<b>"), ("1\\/2", "1/2"), ("\\*\\*", "**"),
    (":-LRB-", ":("),             # stanza's writer escapes brackets inside a token
    ("&amp;lt;", "<"), ("&amp;lt;", "&lt;"),  # escaped twice against once and never
    ("@-@", "-"),
])
def test_known_pairs(leaf, word):
    assert canonical_token(leaf) == canonical_token(word)


def test_the_ambiguity_the_alphabet_leaves_out():
    """stanza's writer maps two different tokens to one form: documented, not resolvable."""
    assert stanza_writer("-LRB)") == stanza_writer("(RRB-") == "-LRB-RRB-"


def test_stanza_tree_writer_escapes_are_undone():
    """stanza's real writer (not our model of it) over leaves with every special character."""
    parse_tree_mod = pytest.importorskip("stanza.models.constituency.parse_tree")
    Tree = parse_tree_mod.Tree
    words = ["(", ")", ":-)", "a(b)c", "&", "'", '"', "[x]", "1/2", "*", "@-@", "-"]
    tree = Tree("ROOT", [Tree("S", [Tree("SYM", [Tree(w)]) for w in words])])
    text = "{}".format(tree)
    _, leaves = parse_tree(text)
    assert len(leaves) == len(words)
    assert [canonical_token(w) for w in leaves] == [canonical_token(w) for w in words]
    # and after Moses escaped the source text
    check_leaves(leaves, [moses_escape(w) for w in words], "t.tree", 1, "t.src", 1)


def test_the_reported_corpus_passes_mgsa_preprocess_without_repairs(tmp_path):
    """PTB quotes against a Moses-escaped PTB-tokenised source: no sentence refused, none flattened."""
    import json

    from mgsa_preprocess.cli import main

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.en").write_text("`` Yes &apos;&apos; , he said .\nthe -LRB- AT&amp;T -RRB- deal\n")
    (raw / "train.de").write_text("ja\ndeal\n")
    (raw / "train.en.tree").write_text(
        "(ROOT (S (`` ``) (INTJ (UH Yes)) ('' '') (, ,) (NP (PRP he)) (VP (VBD said)) (. .)))\n"
        "(ROOT (NP (DT the) (-LRB- -LRB-) (NNP AT&T) (-RRB- -RRB-) (NN deal)))\n")
    main(["-s", "en", "-t", "de", "--trainpref", str(raw / "train"), "--destdir", str(tmp_path / "bin"),
          "--trees-suffix", "tree", "--subword-style", "none", "--lenient", "--no-progress-bar"])
    report = json.loads((tmp_path / "bin" / "mgsa_preprocess_report.json").read_text())["splits"]["train"]
    assert report["repaired"] == {}
    assert report["normalisation"]["leaves_matched_through_escapes"] == 2  # '' and AT&T
