"""Labeled bracket precision, recall and F1 of parsed trees against gold trees (PARSEVAL).

Why a scorer of our own: stanza scores parses with Java CoreNLP's EvaluateParser
(through `stanza.server.parser_eval`), which needs a CoreNLP jar that is not installed
here and cannot be fetched. This one is the same measure in Python, written here for
that reason: both trees are normalised as mgsa-preprocess normalises trees
(preprocess/trees.py: function tags and empty elements removed, the ROOT bracket and
constituents over one word dropped), every remaining constituent is a (label, start,
end) bracket, and brackets are matched as multisets over the whole corpus. Unlike
evalb's COLLINS.prm, punctuation is kept in the spans (the grammar's sentences end in
'.', always attached the same way) and one-word constituents are not counted, so figures
are comparable within this project; preprocess/parser_training/evalb.py scores under evalb's convention
(--evalb), the figure to set beside published parsers'.

    python -m mgsa_preprocess.parser_training.bracket_score GOLD_TREES PARSED_TREES [--evalb]
"""

import argparse
import sys
from collections import Counter
from typing import Iterable, List, Tuple

from ..errors import PreprocessError
from ..trees import canonical_token, iter_tree_texts, parse_tree
from .evalb import evalb_score_pairs
from .scores import Scores


def brackets(text: str, path: str = None, line: int = None) -> Tuple[Counter, List[str]]:
    """The labeled brackets (label, start, end) of one tree, and its words."""
    top, leaves = parse_tree(text, path, line)
    out = Counter()
    stack = [top] if top is not None else []
    while stack:
        tag, start, end, children = stack.pop()
        if children is not None:
            out[(tag, start, end)] += 1
            stack.extend(children)
    return out, leaves


def score_pairs(pairs: Iterable[Tuple[str, str]], gold_path: str = "gold", pred_path: str = "parsed") -> Scores:
    """Scores of (gold tree text, parsed tree text) pairs; their words must agree."""
    scores = Scores()
    for i, (gold_text, pred_text) in enumerate(pairs, 1):
        gold, gold_words = brackets(gold_text, gold_path, i)
        pred, pred_words = brackets(pred_text, pred_path, i)
        if [canonical_token(w) for w in gold_words] != [canonical_token(w) for w in pred_words]:
            raise PreprocessError(f"tree {i} has other words than gold tree {i}: {' '.join(pred_words)[:60]!r} vs "
                                  f"{' '.join(gold_words)[:60]!r}", pred_path)
        scores.add(gold, pred)
    return scores


def read_pairs(gold_path: str, pred_path: str):
    with open(gold_path, encoding="utf-8") as g, open(pred_path, encoding="utf-8") as p:
        gold = [t for _, t in iter_tree_texts(g, gold_path)]
        pred = [t for _, t in iter_tree_texts(p, pred_path)]
    if len(gold) != len(pred):
        raise PreprocessError(f"{len(pred)} trees for {len(gold)} gold trees in {gold_path}", pred_path)
    return list(zip(gold, pred))


def score_files(gold_path: str, pred_path: str) -> Scores:
    return score_pairs(read_pairs(gold_path, pred_path), gold_path, pred_path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m mgsa_preprocess.parser_training.bracket_score", description=__doc__.split("\n")[0])
    p.add_argument("gold", help="gold trees (bracketed, one tree per sentence; a tree may span lines)")
    p.add_argument("parsed", help="parsed trees, in the same order")
    p.add_argument("--evalb", action="store_true", help="evalb's convention (COLLINS.prm) instead: punctuation out of "
                                                        "the spans, one-word constituents counted (preprocess/parser_training/evalb.py)")
    a = p.parse_args(argv)
    try:
        if a.evalb:
            s, errors = evalb_score_pairs(read_pairs(a.gold, a.parsed), a.gold, a.parsed)
        else:
            s = score_files(a.gold, a.parsed)
    except PreprocessError as e:
        sys.exit(f"bracket_score: error: {e}")
    print(" ".join(f"{k} {v}" for k, v in s.as_dict().items()) + (f" error_sentences {errors}" if a.evalb else ""))


if __name__ == "__main__":
    main()
