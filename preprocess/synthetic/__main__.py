"""The command line of the project's grammar corpus: ``python -m mgsa_preprocess.synthetic --out DIR``.

It stands apart from the grammar (__init__.py) because it chooses between the grammar's own
source and the Chinese one (synthetic_zh.py, built on the grammar): the grammar imports neither.
"""

import argparse

from .. import synthetic, synthetic_zh


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m mgsa_preprocess.synthetic",
                                description=synthetic.__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--valid", type=int, default=200)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--src", default="src", help="source language suffix")
    p.add_argument("--tgt", default="tgt", help="target language suffix")
    p.add_argument("--sentences-per-line", type=int, default=1, help="sentences joined into one line")
    p.add_argument("--lang", choices=("en", "zh"), default="en",
                   help="source language: en (the grammar's own), or zh: Chinese words without spaces, Chinese "
                        "phrase labels, an English-like target and the user dictionary lexicon.dict (synthetic_zh.py)")
    p.add_argument("--cyrillic", action="store_true", help="the target in Cyrillic letters (a stand-in for Russian)")
    a = p.parse_args(argv)
    if a.sentences_per_line < 1:
        p.error("--sentences-per-line must be at least 1")
    if a.lang == "zh" and a.cyrillic:
        p.error("--cyrillic is for the grammar's own source (--lang en)")
    sizes = (("train", a.train), ("valid", a.valid), ("test", a.test))
    if a.lang == "zh":
        return synthetic_zh.write_corpus(a.out, sizes, a.seed, a.src, a.tgt, a.sentences_per_line)
    synthetic.write_corpus(a.out, sizes, a.seed, a.src, a.tgt, a.sentences_per_line, a.cyrillic)


if __name__ == "__main__":
    main()
