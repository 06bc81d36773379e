"""A generated treebank of the Penn Treebank's shape, for timing parser training and parsing.

The project's grammar (the package's __init__.py) makes 5-15-word sentences over 6
labels and 60 words; a parser learns it in seconds, so it says nothing about a real
treebank's cost. This layer, over the grammar's ``Node``, makes sentences of 20-30
words (resampled until the length is in range), 26 constituent labels besides ROOT
(every one over two or more words, so it survives the normalisation of
preprocess/trees.py, which collapses single-word constituents), 31 POS tags, and a
Zipf-distributed vocabulary of invented words (about 12,000 types): the WSJ's
shape (~25 words, 26-27 labels, large vocabulary), none of its text.

    python -m mgsa_preprocess.synthetic.ptb_shaped --out DIR [--train 3000 --dev 400 --test 400]

writes ``{train,dev,test}.mrg`` (one tree per line) and ``{split}.txt`` (the words).
Deterministic for a seed. The parser benchmarks (benchmarks/bench_parsing.py,
benchmarks/bench_parser_training.py) time on it.
"""

import argparse
import itertools
import os
import random
from collections import Counter

from . import Node

# open classes: invented words, Zipf-distributed; closed classes: fixed lists
OPEN = {"NN": 3000, "NNS": 1500, "NNP": 2500, "NNPS": 200, "JJ": 1500, "JJR": 100, "JJS": 100, "VB": 600,
        "VBD": 600, "VBZ": 500, "VBP": 400, "VBG": 500, "VBN": 500, "RB": 300, "CD": 300}
CLOSED = {"DT": ["the", "a", "an", "this", "that", "some", "every", "no"], "IN": ["of", "in", "for", "on", "with",
          "at", "by", "from", "about", "than", "because", "if", "while"], "TO": ["to"], "CC": ["and", "or", "but"],
          "MD": ["will", "would", "could", "may", "should"], "PRP": ["it", "he", "they", "we", "she"],
          "PRP$": ["its", "their", "his", "our"], "WDT": ["which", "that", "what"], "WP": ["who", "what"],
          "WRB": ["how", "when", "where", "why"], "RP": ["up", "out", "off", "down"], "POS": ["'s"],
          "UH": ["oh", "well", "yes", "no"], "LS": ["1", "2", "3", "a", "b"], "RBR": ["more", "less", "earlier"],
          ",": [","], ".": [".", "?", "!"], ":": [":", ";", "--"], "``": ["``"], "''": ["''"]}
SYLLABLES = [c + v for c in "bcdfghklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


class ShapedGrammar:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        lex = random.Random(seed * 7919 + 1)  # the lexicon does not depend on how many sentences are drawn
        self.words = dict(CLOSED)
        self.cum = {}
        seen = set(w for ws in CLOSED.values() for w in ws)
        for tag, n in OPEN.items():
            words = []
            while len(words) < n:
                w = "".join(lex.choice(SYLLABLES) for _ in range(lex.choice((1, 2, 2, 3, 3, 4))))
                w = w.capitalize() if tag.startswith("NNP") else w
                w = str(lex.randrange(1, 10 ** lex.randint(1, 4))) if tag == "CD" else w
                if w not in seen:
                    seen.add(w)
                    words.append(w + ("s" if tag in ("NNS", "NNPS", "VBZ") else ""))
            self.words[tag] = words
            self.cum[tag] = list(itertools.accumulate(1.0 / (r + 1) for r in range(n)))  # Zipf

    # helpers
    def w(self, tag):
        if tag in self.cum:
            return Node(tag, self.rng.choices(self.words[tag], cum_weights=self.cum[tag])[0])
        return Node(tag, self.rng.choice(self.words[tag]))

    def p(self, x):
        return self.rng.random() < x

    def node(self, label, *children):
        return Node(label, [self.w(c) if isinstance(c, str) else c for c in children])

    # phrases; `d` is the depth, recursion thins out with it
    def np(self, d=0):
        r = self.rng.random()
        if d < 4 and r < 0.16:
            return self.node("NP", self.np(d + 1), self.pp(d + 1))
        if d < 3 and r < 0.22:
            return self.node("NP", self.np(d + 1), self.sbar_rel(d + 1))
        if d < 3 and r < 0.25:
            return self.node("NP", self.np(d + 1), ",", self.np(d + 1), ",")
        if d < 3 and r < 0.28:
            return self.node("NP", self.np(d + 1), "CC", self.np(d + 1))
        if r < 0.31:
            return self.node("NP", self.qp(), "NNS")
        if r < 0.33:
            return self.node("NP", self.node("NP", "NNP", "NNP", "POS"), "JJ", "NN")
        if r < 0.35:
            return self.node("NP", "DT", self.node("NX", self.node("NX", "NN", "NNS"), "CC", self.node("NX", "NN", "NNS")))
        if r < 0.37:
            return self.node("NP", self.node("NAC", "NNP", ",", "NNP"), "NNP")
        if d < 3 and r < 0.39:
            return self.node("NP", self.np(d + 1), self.node("RRC", self.advp(), self.pp(d + 1)))
        if d < 3 and r < 0.41:
            return self.node("NP", self.np(d + 1), self.node("PRN", ",", self.s(d + 2), ","))
        if r < 0.50:
            return self.node("NP", "NNP", "NNP")
        if r < 0.58:
            return self.node("NP", "PRP$", "NN", "NNS")
        if r < 0.66:
            return self.node("NP", "DT", self.adjp(), "NN")
        return self.node("NP", "DT", *(["JJ"] if self.p(0.4) else []), "NN")

    def qp(self):
        return self.rng.choice([lambda: self.node("QP", "IN", "CD", "CD"), lambda: self.node("QP", "RB", "CD"),
                                lambda: self.node("QP", "CD", "TO", "CD")])()

    def adjp(self):
        return self.rng.choice([lambda: self.node("ADJP", "RB", "JJ"), lambda: self.node("ADJP", "JJ", "CC", "JJ"),
                                lambda: self.node("ADJP", "RBR", "JJ")])()

    def advp(self):
        return self.node("ADVP", "RB", "RB") if self.p(0.6) else self.node("ADVP", self.np(5), "RB")

    def pp(self, d):
        return self.node("PP", "IN", self.np(d + 1))

    def whnp(self):
        return self.node("WHNP", "WDT", "NN") if self.p(0.5) else self.node("WHNP", "WP", "POS", "NNS")

    def sbar_rel(self, d):
        return self.node("SBAR", self.whnp(), self.node("S", self.vp(d + 1)))

    def vp(self, d=0):
        r = self.rng.random()
        if d < 3 and r < 0.15:
            return self.node("VP", "MD", self.vp(d + 1))
        if d < 3 and r < 0.22:
            return self.node("VP", "VBZ", self.node("VP", "VBN", self.np(d + 1)))
        if d < 3 and r < 0.30:
            return self.node("VP", "VBD", self.node("SBAR", "IN", self.s(d + 1)))
        if r < 0.34:
            return self.node("VP", "VBD", self.node("PRT", "RP", "RB"), self.np(d + 1))
        if r < 0.38:
            return self.node("VP", "VBZ", self.node("UCP", self.np(d + 1), "CC", self.adjp()))
        if d < 3 and r < 0.42:
            return self.node("VP", "VBD", self.np(d + 1), self.node("S", self.node("VP", "TO", self.vp(d + 2))))
        if r < 0.48:
            return self.node("VP", "VBZ", self.adjp())
        if r < 0.52:
            return self.node("VP", "VBP", self.np(d + 1), self.advp())
        if r < 0.75:
            return self.node("VP", "VBD", self.np(d + 1), self.pp(d + 1))
        return self.node("VP", self.rng.choice(["VBD", "VB", "VBG"]), self.np(d + 1))

    def s(self, d=0):
        r = self.rng.random()
        if d < 2 and r < 0.12:
            return self.node("S", self.s(d + 1), ",", self.node("CONJP", "RB", "IN") if self.p(0.3) else self.w("CC"),
                             self.s(d + 1))
        if r < 0.22:
            return self.node("S", self.pp(d), ",", self.np(d), self.vp(d))
        if r < 0.28:
            return self.node("S", self.node("SBAR", "IN", self.s(d + 2)), ",", self.np(d), self.vp(d))
        if r < 0.34:
            return self.node("S", self.advp(), ",", self.np(d), self.vp(d))
        return self.node("S", self.np(d), self.vp(d))

    def top(self) -> Node:
        r = self.rng.random()
        if r < 0.05:
            quote = self.node("S", self.np(1), self.vp(1))
            t = self.node("SINV", "``", quote, ",", "''", self.node("VP", "VBD", "RP"), self.np(2), ".")
        elif r < 0.09:
            t = self.node("SBARQ", self.node("WHNP", "WDT", "NNS"), self.node("SQ", "VBZ", self.np(1), self.vp(1)), ".")
        elif r < 0.11:
            t = self.node("SBARQ", self.node("WHADVP", "WRB", "RB"), self.node("SQ", "MD", self.np(1), self.vp(1)), ".")
        elif r < 0.13:
            t = self.node("SBARQ", self.node("WHADJP", "WRB", "JJ"), self.node("SQ", "VBP", self.np(1), self.vp(1)), ".")
        elif r < 0.15:
            t = self.node("SBARQ", self.node("WHPP", "IN", self.whnp()), self.node("SQ", "MD", self.np(1), self.vp(1)), ".")
        elif r < 0.18:
            t = self.node("FRAG", self.np(0), ":", self.np(0), ".")
        elif r < 0.20:
            t = self.node("S", self.node("INTJ", "UH", "UH"), ",", self.np(0), self.vp(0), ".")
        elif r < 0.21:
            t = self.node("S", self.node("LST", "LS", ":"), self.np(0), self.vp(0), ".")
        elif r < 0.22:
            t = self.node("S", self.node("X", "DT", "RBR"), ",", self.np(0), self.vp(0), ".")
        else:
            s = self.s(0)
            t = Node("S", s.children + [self.w(".")])
        return Node("ROOT", [t])

    def sentence(self, low: int = 20, high: int = 30) -> Node:
        while True:  # resampled: deterministic for the seed
            t = self.top()
            if low <= len(t.leaves()) <= high:
                return t


def labels(tree: Node, out: Counter) -> Counter:
    """Constituent labels over 2+ words (those the normalisation keeps)."""
    if not tree.is_preterminal:
        if len(tree.leaves()) > 1:
            out[tree.label] += 1
        for c in tree.children:
            labels(c, out)
    return out


def write_treebank(out_dir: str, sizes=(("train", 3000), ("dev", 400), ("test", 400)), seed: int = 1) -> dict:
    """Write {split}.mrg and {split}.txt; return per-split tree counts, mean length and labels."""
    os.makedirs(out_dir, exist_ok=True)
    grammar = ShapedGrammar(seed)
    summary = {}
    for split, n in sizes:
        lengths, labs = [], Counter()
        with open(os.path.join(out_dir, f"{split}.mrg"), "w") as ft, open(os.path.join(out_dir, f"{split}.txt"), "w") as fw:
            for _ in range(n):
                tree = grammar.sentence()
                ft.write(tree.bracketed() + "\n")
                fw.write(" ".join(tree.leaves()) + "\n")
                lengths.append(len(tree.leaves()))
                labels(tree, labs)
        summary[split] = {"trees": n, "mean_words": round(sum(lengths) / max(n, 1), 1),
                          "labels": len(labs) - ("ROOT" in labs)}
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=3000)
    p.add_argument("--dev", type=int, default=400)
    p.add_argument("--test", type=int, default=400)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    print(write_treebank(a.out, (("train", a.train), ("dev", a.dev), ("test", a.test)), a.seed))


if __name__ == "__main__":
    main()
