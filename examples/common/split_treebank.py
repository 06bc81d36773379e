"""Split a treebank into train.mrg / dev.mrg / test.mrg, in file order, one tree per line.

    python examples/common/split_treebank.py --trees DIR_OR_FILES... --out DIR [--dev 400] [--test 400]

A directory stands for its *.mrg files in name order (NLTK's treebank/combined: wsj_0001.mrg ...
wsj_0199.mrg); files are read in the order given. The trees keep their order: the first ones are
the training trees, the next --dev the dev trees, the last --test the test trees (on the NLTK WSJ
sample's 3,914 trees: 3,114 / 400 / 400). Deterministic: no shuffling, so every recipe that calls
it gets the same three files. A tree may span several lines (as the .mrg files write them); each
is written on one line with its whitespace collapsed, labels, function tags and traces untouched
(mgsa-train-parser and mgsa-preprocess normalise them when they read the files).

--treebank-format ctb reads the Penn Chinese Treebank's files as distributed (a directory stands
for every file in it, in name order: chtb_0001.fid ...; the SGML wrappers are removed, the trees
written as above); sinica reads the Sinica Treebank's ICG lines and writes them converted
(preprocess/parser_training/sinica.py). Either way the output is bracketed: train it with the default
--treebank-format ptb.
"""

import argparse
import glob
import os
import sys

from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.parser_training.treebank import FORMATS, tree_texts


def input_files(args, fmt="ptb"):
    files = []
    pattern = "*.mrg" if fmt == "ptb" else "*"
    for arg in args:
        if os.path.isdir(arg):
            found = sorted(f for f in glob.glob(os.path.join(arg, pattern)) if os.path.isfile(f))
            if not found:
                raise PreprocessError(f"no {pattern} file in this directory", arg)
            files.extend(found)
        elif os.path.isfile(arg):
            files.append(arg)
        else:
            raise PreprocessError("no such file or directory", arg)
    return files


def read_all(files, fmt="ptb"):
    trees = []
    for path in files:
        texts = tree_texts(path, fmt)  # UTF-8, or one line naming the file and line
        trees.extend(" ".join(text.split()) for _, text in texts)
    return trees


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", nargs="+", required=True, metavar="DIR_OR_FILE",
                   help="treebank files, or directories of *.mrg files (taken in name order)")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for train.mrg, dev.mrg, test.mrg")
    p.add_argument("--dev", type=int, default=400, help="dev trees, after the training trees (default: 400)")
    p.add_argument("--test", type=int, default=400, help="test trees, the last ones (default: 400)")
    p.add_argument("--treebank-format", choices=FORMATS, default="ptb",
                   help="ptb (default), ctb (the Penn Chinese Treebank's files with their SGML) or sinica (ICG lines)")
    a = p.parse_args(argv)
    try:
        if a.dev < 1 or a.test < 1:
            raise PreprocessError(f"--dev and --test must be at least 1 (got {a.dev}, {a.test})")
        files = input_files(a.trees, a.treebank_format)
        inputs = {os.path.realpath(f) for f in files}
        for name in ("train", "dev", "test"):  # read first, but the user's treebank is not written over
            if os.path.realpath(os.path.join(a.out, f"{name}.mrg")) in inputs:
                raise PreprocessError(f"--out would write {name}.mrg over this input: give --out another folder",
                                      os.path.join(a.out, f"{name}.mrg"))
        trees = read_all(files, a.treebank_format)
        n_train = len(trees) - a.dev - a.test
        if n_train < 1:
            raise PreprocessError(f"{len(trees)} trees in {len(files)} files: too few for {a.dev} dev and "
                                  f"{a.test} test trees and at least one training tree")
    except PreprocessError as e:
        sys.exit(f"split_treebank.py: error: {e}")
    os.makedirs(a.out, exist_ok=True)
    parts = (("train", trees[:n_train]), ("dev", trees[n_train:n_train + a.dev]), ("test", trees[n_train + a.dev:]))
    for name, part in parts:
        with open(os.path.join(a.out, f"{name}.mrg"), "w", encoding="utf-8") as f:
            f.writelines(t + "\n" for t in part)
    print(f"split_treebank.py: {len(trees)} trees from {len(files)} files -> {a.out}: "
          + ", ".join(f"{name}.mrg {len(part)}" for name, part in parts), file=sys.stderr)


if __name__ == "__main__":
    main()
