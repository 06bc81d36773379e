"""Treebank files as mgsa-train-parser reads them, and the tagger's training file.

The trees are read and normalised as mgsa-preprocess reads them (multi-line trees,
function tags, -NONE- elements: preprocess/trees.py), except that constituents over one
word are kept by default (`keep_one_word`): a parser that learns them is comparable under
evalb's convention, and mgsa-preprocess collapses them when it reads the parser's trees.

Constituent labels of the dev trees that the (normalised) training trees lack are an
error before any training: stanza would stop on them only after the tagger has trained.

Formats (--treebank-format): `ptb`, bracketed trees; `ctb`, the Penn Chinese Treebank as
distributed, bracketed trees inside SGML wrappers (<DOC>, <TEXT>, <P>, <S ID=1>, and metadata
elements such as <DOCID>, <HEADER>, <DATE>, whose text is dropped; ctb.py), then normalised as
`ptb` (empty elements, function tags and indices: IP-HLN, NP-SBJ-1 -> IP, NP); `sinica`, the
Sinica Treebank's ICG lines (sinica.py).
"""

import re
from collections import Counter
from typing import FrozenSet, List, NamedTuple

from ..errors import PreprocessError
from ..text_files import lines
from ..trees import TreeStats, canonical_token, iter_tree_texts, parse_tree, strip_label

_ESCAPE = (("(", "-LRB-"), (")", "-RRB-"))


def _leaf(word: str) -> str:
    """A leaf as the pipeline will see the word (escapes undone), brackets escaped for the tree file."""
    word = canonical_token(word)
    for ch, esc in _ESCAPE:
        word = word.replace(ch, esc)
    return word


def bracketed(node, words) -> str:
    """One-line tree text of a normalised node (preprocess/trees.py's tuples)."""
    tag, start, _, children = node
    if children is None:
        return f"({tag} {_leaf(words[start])})"
    return f"({tag} " + " ".join(bracketed(c, words) for c in children) + ")"


class Tree(NamedTuple):
    text: str  # one line, under ROOT
    words: List[str]
    tags: List[str]
    line: int  # of the tree's first line in its file
    labels: FrozenSet[str]  # constituent labels, ROOT included (what stanza's trainer checks)
    raw: str  # the tree as the file writes it (evalb's convention scores against this)


FORMATS = ("ptb", "ctb", "sinica")


def tree_texts(path: str, fmt: str = "ptb", extra: dict = None):
    """(line, bracketed tree text) of a treebank file in format `fmt`; `extra` gets the counts of
    what the format's reader removed or converted (SGML lines, roles, ...)."""
    extra = {} if extra is None else extra
    if fmt == "ptb":
        # read by text_files.lines: a missing or non-UTF-8 file is one line naming it (and the line)
        return iter_tree_texts((line for _, line in lines(path, "the treebank")), path)
    if fmt == "ctb":
        from .ctb import strip_sgml
        return iter_tree_texts(strip_sgml(path, extra), path)
    if fmt == "sinica":
        from .sinica import read_sinica
        trees, report = read_sinica(path)
        extra.update((k, v) for k, v in report.items() if isinstance(v, int))
        return ((t.line, t.tree) for t in trees)
    raise ValueError(f"unknown treebank format {fmt!r}")


def read_treebank(path: str, keep_one_word: bool = False, fmt: str = "ptb"):
    """Normalised trees of a treebank file (one-word constituents kept if `keep_one_word`): [Tree], stats."""
    stats = TreeStats()
    out = []
    empty = 0
    extra = {}
    for line, text in tree_texts(path, fmt, extra):
        top, leaves = parse_tree(text, path, line, stats, keep_one_word)  # BadTree / PreprocessError name file and line
        if top is None:
            empty += 1
            continue
        words = [canonical_token(w) for w in leaves]
        tags = [None] * len(words)
        labels = {"ROOT"}
        stack = [top]
        while stack:
            tag, start, _, children = stack.pop()
            if children is None:
                tags[start] = tag
            else:
                labels.add(tag)
                stack.extend(children)
        out.append(Tree(f"(ROOT {bracketed(top, leaves)})", words, tags, line, frozenset(labels), text))
    if not out:
        raise PreprocessError("no tree with words in this file", path)
    return out, dict(stats.as_dict(), empty_trees_skipped=empty, **extra)


_INNER_LABEL = re.compile(r"\(\s*([^\s()]+)\s*\(")  # a label followed by a bracket: not a pre-terminal


def raw_label_counts(path: str, fmt: str = "ptb") -> Counter:
    """Constituent labels as the file writes them (function tags stripped), before the
    normalisation drops constituents over one word or over empty elements only."""
    text = "".join(t for _, t in tree_texts(path, fmt))
    return Counter(strip_label(m) for m in _INNER_LABEL.findall(text))


def check_dev_labels(train_trees, dev_trees, train_path: str, dev_path: str, drop: bool, keep_one_word=False,
                     fmt: str = "ptb"):
    """The dev trees whose labels all occur in the training trees; an error naming the first
    other one, unless `drop`. Returns (dev trees kept, {label: dropped trees with it})."""
    known = frozenset().union(*(t.labels for t in train_trees))
    unseen = [t for t in dev_trees if not t.labels <= known]
    counts = Counter(label for t in unseen for label in t.labels - known)
    if unseen and not drop:
        first = unseen[0]
        label = min(first.labels - known)
        raw = raw_label_counts(train_path, fmt)[label]
        why = (f"{train_path} has {label} {raw} times, but each over empty elements only, which the "
               f"normalisation removes" if raw and keep_one_word else
               f"{train_path} has {label} {raw} times, but each over a single word or over empty elements only, "
               f"which the normalisation collapses or removes (as mgsa-preprocess reads trees)" if raw
               else f"{train_path} has no {label}")
        others = ", ".join(f"{k} in {n}" for k, n in sorted(counts.items()))
        raise PreprocessError(f"constituent label {label} does not occur in the training trees ({why}), so the "
                              f"parser could never predict it; {len(unseen)} of {len(dev_trees)} dev trees have such "
                              f"labels ({others}): add trees with them to the training file, or pass "
                              f"--unseen-dev-labels drop to leave those dev trees out (counted)", dev_path, first.line)
    return [t for t in dev_trees if t.labels <= known], dict(sorted(counts.items()))


def write_conllu(trees, path: str) -> None:
    """The tagger's data: the treebank's tag in XPOS (what the parser reads) and in UPOS. stanza's
    scorer (UD's) wants a tree in HEAD/DEPREL: a flat one, every word under the first."""
    with open(path, "w", encoding="utf-8") as f:
        for tree in trees:
            for i, (w, t) in enumerate(zip(tree.words, tree.tags), 1):
                head = "0\troot" if i == 1 else "1\tdep"
                f.write(f"{i}\t{w}\t_\t{t}\t{t}\t_\t{head}\t_\t_\n")
            f.write("\n")


def read_inputs(a):
    """The training and dev trees, read and checked (dev labels the training trees lack) before
    anything is written."""
    keep = a.one_word_constituents == "keep"
    fmt = a.treebank_format
    train_trees, train_stats = read_treebank(a.train, keep, fmt)
    dev_trees, dev_stats = read_treebank(a.dev, keep, fmt)
    if fmt != "ptb":
        print(f"[mgsa-train-parser] {fmt} treebank, what the reading removed or converted: "
              + "; ".join(f"{name}: " + ", ".join(f"{k} {v}" for k, v in stats.items() if v)
                          for name, stats in ((a.train, train_stats), (a.dev, dev_stats))), flush=True)
    n_dev = len(dev_trees)
    dev_trees, unseen = check_dev_labels(train_trees, dev_trees, a.train, a.dev, a.unseen_dev_labels == "drop", keep,
                                         fmt)
    if unseen:
        if not dev_trees:
            raise PreprocessError("no dev tree left after --unseen-dev-labels drop", a.dev)
        print(f"[mgsa-train-parser] --unseen-dev-labels drop: dropped {n_dev - len(dev_trees)} of {n_dev} dev trees "
              f"with constituent labels the training trees lack ("
              + ", ".join(f"{k} in {n}" for k, n in unseen.items()) + ")", flush=True)
    return train_trees, dev_trees, {"trees": n_dev - len(dev_trees), "by_unseen_label": unseen}, \
        {"train": train_stats, "dev": dev_stats}
