"""Labeled bracket F1 under evalb's usual convention (the COLLINS.prm parameter file).

Published constituency parsers report evalb (Sekine and Collins) with COLLINS.prm. The
project's scorer (preprocess/parser_training/bracket_score.py) differs from it on purpose (it scores the trees
as mgsa-preprocess reads them), so its figures do not stand next to published ones; this one
does. Written here by hand because evalb is a C program that is not on PyPI (nor on these
machines); what it implements is COLLINS.prm's rules as evalb.c applies them:

* words whose POS tag is , : `` '' . or -NONE- are deleted (DELETE_LABEL), so punctuation
  and empty elements are left out of every span; a bracket left with no word is not counted;
* the root bracket (TOP; here also ROOT and the PTB's unlabeled outer bracket) is deleted;
* labels are cut at the first '-' or '=' (function tags, indices): NP-SBJ-1 -> NP;
* ADVP and PRT count as the same label (EQ_LABEL ADVP PRT);
* every other bracket counts, one-word constituents and unary chains included
  ((NP (PRP it)) is an NP over one word), matched one to one as (label, start, end);
* a sentence whose two trees keep different numbers of words (a word tagged as punctuation in
  one tree only) is an error sentence, left out of the totals and counted, as evalb does.
Figures are evalb's "all sentences" ones (no length cutoff).
"""

import re
from collections import Counter
from typing import Iterable, List, Tuple

from .scores import Scores
from ..errors import PreprocessError

DELETED_TAGS = frozenset((",", ":", "``", "''", ".", "-NONE-"))
ROOT_LABELS = frozenset(("", "TOP", "ROOT"))
EQUIVALENT = {"PRT": "ADVP"}

_TOKENS = re.compile(r"\(|\)|[^\s()]+")


def _label(label: str) -> str:
    """evalb's modify_label: the label up to its first '-' or '=' (-LRB- and the like are POS tags,
    never bracket labels here)."""
    cut = re.split(r"[-=]", label, maxsplit=1)[0]
    return EQUIVALENT.get(cut, cut)


def evalb_brackets(text: str, path: str = None, line: int = None) -> Tuple[Counter, List[str]]:
    """The brackets (label, start, end) of one tree as evalb counts them, and its kept words."""
    tokens = _TOKENS.findall(text)
    brackets = Counter()
    words: List[str] = []
    stack = []  # [label, start] of open brackets
    i = 0
    try:
        while i < len(tokens):
            tok = tokens[i]
            if tok == "(":
                label = tokens[i + 1] if tokens[i + 1] not in "()" else ""
                i += 1 if label == "" else 2
                if tokens[i] not in "()" and tokens[i + 1] == ")":  # a pre-terminal: (TAG word)
                    if label not in DELETED_TAGS:
                        words.append(tokens[i])
                    i += 2
                    continue
                stack.append((label, len(words)))
            elif tok == ")":
                label, start = stack.pop()
                if len(words) > start and (stack or label not in ROOT_LABELS):
                    brackets[(_label(label), start, len(words))] += 1
                i += 1
            else:
                raise PreprocessError(f"a word outside a (TAG word) bracket: {tok!r}", path, line)
    except IndexError:
        raise PreprocessError("unbalanced brackets", path, line) from None
    if stack:
        raise PreprocessError("unbalanced brackets", path, line)
    return brackets, words


def evalb_score_pairs(pairs: Iterable[Tuple[str, str]], gold_path: str = "gold",
                      pred_path: str = "parsed") -> Tuple[Scores, int]:
    """Scores of (gold tree text, parsed tree text) pairs, and the number of error sentences."""
    scores, errors = Scores(), 0
    for i, (gold_text, pred_text) in enumerate(pairs, 1):
        gold, gold_words = evalb_brackets(gold_text, gold_path, i)
        pred, pred_words = evalb_brackets(pred_text, pred_path, i)
        if len(gold_words) != len(pred_words):
            errors += 1  # evalb: "Length unmatch"
            continue
        scores.add(gold, pred)
    return scores, errors
