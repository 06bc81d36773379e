"""Copy a file of bracketed trees, one tree per output line, keeping only the trees
whose 0-based numbers are listed in KEPT (clean_corpus.py's record), if given.

    python select_trees.py TREES OUT [--kept KEPT] [--expect N] [--lowercase]

A tree may span several input lines (as the Penn Treebank writes them); blank lines
between trees are ignored. Brackets inside words must be escaped (-LRB-, -RRB-), as
in every treebank. --expect N stops with an error unless the input holds N trees.
--lowercase lowercases the leaves (labels and bracket escapes such as -LRB- stay), for
corpora that are lowercased after parsing: the parser reads the cased text, and the
trees then match the lowercased text word for word.
"""

import argparse
import re
import sys

from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.text_files import lines

# "(" with the label after it (kept as is), or a leaf
_TOKEN = re.compile(r"(\(\s*[^\s()]*)|([^\s()]+)")
_BRACKET_ESCAPE = re.compile(r"(-[LR][RCS]B-)")


def lowercase_leaf(leaf):
    return "".join(part if _BRACKET_ESCAPE.fullmatch(part) else part.lower() for part in _BRACKET_ESCAPE.split(leaf))


def lowercase_leaves(tree):
    return _TOKEN.sub(lambda m: m.group(1) or lowercase_leaf(m.group(2)), tree)


def read_trees(path):
    depth, buf = 0, []
    try:
        for lineno, line in lines(path, "the trees"):  # UTF-8, or one line naming the line and column
            for ch in line:
                if depth == 0 and ch.isspace():
                    continue
                if depth == 0 and ch != "(":
                    sys.exit(f"select_trees.py: error: {path}:{lineno}: text outside brackets")
                buf.append(ch)
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        yield " ".join("".join(buf).split())
                        buf = []
    except PreprocessError as e:
        sys.exit(f"select_trees.py: error: {e}")
    if depth:
        sys.exit(f"select_trees.py: error: {path}: unbalanced brackets at the end of the file")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees")
    p.add_argument("out")
    p.add_argument("--kept", help="0-based numbers of the trees to keep, one a line, ascending")
    p.add_argument("--expect", type=int, help="number of trees the input must hold")
    p.add_argument("--lowercase", action="store_true", help="lowercase the leaves")
    a = p.parse_args(argv)
    keep = None
    if a.kept:
        with open(a.kept) as f:
            keep = {int(x) for x in f if x.strip()}
    n = written = 0
    with open(a.out, "w", encoding="utf-8") as out:
        for n, tree in enumerate(read_trees(a.trees), 1):
            if keep is None or n - 1 in keep:
                out.write((lowercase_leaves(tree) if a.lowercase else tree) + "\n")
                written += 1
    if a.expect is not None and n != a.expect:
        sys.exit(f"select_trees.py: error: {a.trees} holds {n} trees but the text it belongs to had {a.expect} "
                 f"lines (before cleaning)")
    print(f"{a.trees}: {written} of {n} trees -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
