"""A synthetic parallel corpus whose translation depends on the source's syntax.

The project ships no third-party text: tests, benchmarks and the demo draw their
data from this grammar. Each example is a source sentence, its gold constituency
tree (Penn Treebank brackets) and a target sentence produced from that tree by
rules that need the constituent structure:

* verb-final order inside verb phrases:  VP(V NP PP)  ->  NP' PP' V'
* adjectives follow their noun:          NP(DT JJ NN) ->  DT' NN' JJ'
* PP attachment changes the output: a PP attached to a noun phrase moves in front
  of it and its preposition takes a different word than a PP attached to the verb
  phrase, although the source string can be the same for both attachments.

A clause may open with a PP and a comma, or an adverb (kept in place). Clauses come in two tenses (past VBD, present VBZ) and two voices, so that the
probing tasks (fairseq_mgsa/analysis/probing/labels.py) have two classes each. A
passive clause is a verb group of its own, built for the same rules: the auxiliary
takes the participle's VP as its complement, and both VPs are verb-final,
``VP(VBD was, VP(VBN seen, PP(by NP), PP))`` -> ``PP(by)' PP' VBN' VBD'``; the agent's
"by" is never one of the attachment-ambiguous prepositions.

Run ``python -m mgsa_preprocess.synthetic --out DIR`` to write
``{train,valid,test}.{src,tgt}`` and the gold trees ``{split}.src.tree``.
"""

import argparse
import os
import random
from dataclasses import dataclass
from typing import List, Tuple

# Invented lexicon: source word -> (target word, target word when the
# preposition heads a noun-attached PP).
DETERMINERS = {"the": "da", "a": "en", "every": "jede", "some": "mang"}
ADJECTIVES = {"old": "alto", "red": "rosa", "small": "kilo", "quiet": "stil", "clever": "kluk", "green": "verdo"}
NOUNS = {
    "dog": "hundo", "cat": "kato", "farmer": "bauro", "telescope": "skopo", "garden": "gardo",
    "river": "fluvo", "teacher": "lero", "book": "libro", "hill": "monto", "friend": "amiko",
    "letter": "lettro", "market": "merko",
}
NAMES = {"Anna": "Ana", "Boris": "Borio", "Clara": "Klara", "David": "Davo"}
VERBS = {"saw": "vidis", "found": "trovis", "liked": "amis", "watched": "rigardis", "carried": "portis", "met": "renkis"}
# the same verbs' present (VBZ) and past participle (VBN) forms, keyed by the past form
PRESENT = {"saw": ("sees", "vidas"), "found": ("finds", "trovas"), "liked": ("likes", "amas"),
           "watched": ("watches", "rigardas"), "carried": ("carries", "portas"), "met": ("meets", "renkas")}
PARTICIPLE = {"saw": ("seen", "vidita"), "found": ("found", "trovita"), "liked": ("liked", "amita"),
              "watched": ("watched", "rigardita"), "carried": ("carried", "portita"), "met": ("met", "renkita")}
AUXILIARIES = {"was": "estis", "is": "estas"}  # passive "be", past and present
ADVERBS = {"then": "tiam", "often": "ofte"}  # sentence adverbs, (ADVP (RB then))
AGENT = ("by", "far")  # the passive's agent preposition, attached to the participle's VP
PRESENT_RATE, PASSIVE_RATE = 0.4, 0.25
FRONTED_PP_RATE, ADVERB_RATE = 0.15, 0.1  # clause openers: "near the hill , NP VP ." / "then NP VP ."
PREPOSITIONS = {  # VP-attached, NP-attached
    "with": ("kun", "kunte"), "near": ("apud", "apude"), "behind": ("post", "poste"), "on": ("sur", "sure"),
}


@dataclass
class Node:
    label: str
    children: list  # of Node, or a single str for a pre-terminal

    @property
    def is_preterminal(self) -> bool:
        return isinstance(self.children, str)

    def leaves(self) -> List[str]:
        if self.is_preterminal:
            return [self.children]
        return [w for c in self.children for w in c.leaves()]

    def bracketed(self) -> str:
        if self.is_preterminal:
            return f"({self.label} {self.children})"
        return f"({self.label} " + " ".join(c.bracketed() for c in self.children) + ")"


class Grammar:
    def __init__(self, seed: int, max_depth: int = 3):
        self.rng = random.Random(seed)
        self.max_depth = max_depth

    def pick(self, table):
        return self.rng.choice(sorted(table))

    def noun_phrase(self, depth: int) -> Node:
        r = self.rng.random()
        if r < 0.15:
            base = Node("NP", [Node("NNP", self.pick(NAMES))])
        elif r < 0.55:
            base = Node("NP", [Node("DT", self.pick(DETERMINERS)), Node("NN", self.pick(NOUNS))])
        else:
            base = Node("NP", [Node("DT", self.pick(DETERMINERS)), Node("JJ", self.pick(ADJECTIVES)),
                               Node("NN", self.pick(NOUNS))])
        if depth < self.max_depth and self.rng.random() < 0.3:
            return Node("NP", [base, self.prep_phrase(depth + 1)])
        return base

    def prep_phrase(self, depth: int) -> Node:
        return Node("PP", [Node("IN", self.pick(PREPOSITIONS)), self.noun_phrase(depth + 1)])

    def verb_phrase(self) -> Node:
        verb = self.pick(VERBS)
        present = self.rng.random() < PRESENT_RATE
        if self.rng.random() < PASSIVE_RATE:  # (VP (VBx was/is) (VP (VBN seen) (PP by NP) [PP]))
            agent = Node("PP", [Node("IN", AGENT[0]), self.noun_phrase(2)])
            inner = [Node("VBN", PARTICIPLE[verb][0]), agent]
            if self.rng.random() < 0.5:
                inner.append(self.prep_phrase(2))
            aux = Node("VBZ", "is") if present else Node("VBD", "was")
            return Node("VP", [aux, Node("VP", inner)])
        head = Node("VBZ", PRESENT[verb][0]) if present else Node("VBD", verb)
        children = [head, self.noun_phrase(1)]
        if self.rng.random() < 0.5:
            children.append(self.prep_phrase(1))
        return Node("VP", children)

    def sentence(self) -> Node:
        r = self.rng.random()
        opener = []
        if r < FRONTED_PP_RATE:  # a clause-level PP: not attached to a noun, so its VP word
            opener = [self.prep_phrase(2), Node(",", ",")]
        elif r < FRONTED_PP_RATE + ADVERB_RATE:
            opener = [Node("ADVP", [Node("RB", self.pick(ADVERBS))])]
        s = Node("S", opener + [self.noun_phrase(1), self.verb_phrase(), Node(".", ".")])
        return Node("ROOT", [s])


def translate(node: Node) -> List[str]:
    """Target words for a subtree, by the reordering rules of the module docstring."""
    if node.is_preterminal:
        w = node.children
        if node.label == "VBZ" and w not in AUXILIARIES:
            return [next(t for s, t in PRESENT.values() if s == w)]
        if node.label == "VBN":
            return [next(t for s, t in PARTICIPLE.values() if s == w)]
        for table in (DETERMINERS, ADJECTIVES, NOUNS, NAMES, VERBS, AUXILIARIES, ADVERBS):
            if w in table:
                return [table[w]]
        return [w]  # punctuation
    labels = [c.label for c in node.children]
    parts = [translate_pp(c, node.label) if c.label == "PP" else translate(c) for c in node.children]
    if node.label == "VP":  # verb-final
        order = list(range(1, len(parts))) + [0]
    elif node.label == "NP" and labels == ["DT", "JJ", "NN"]:
        order = [0, 2, 1]
    elif node.label == "NP" and labels == ["NP", "PP"]:  # noun-attached PP moves first
        order = [1, 0]
    else:
        order = list(range(len(parts)))
    return [w for i in order for w in parts[i]]


def translate_pp(pp: Node, attached_to: str) -> List[str]:
    prep, np = pp.children
    if prep.children == AGENT[0]:
        return [AGENT[1]] + translate(np)
    vp_word, np_word = PREPOSITIONS[prep.children]
    return [np_word if attached_to == "NP" else vp_word] + translate(np)


def generate(n: int, seed: int, sentences_per_line: int = 1) -> List[Tuple[str, str, str]]:
    """`n` examples of (source sentence, target sentence, source tree), reproducible from `seed`.
    With sentences_per_line k > 1 each example is k sentences in a row, their trees the
    children of one S (ROOT (S (S ...) (S ...))): lines of WMT-like length (about 11 k words)."""
    grammar = Grammar(seed)
    out = []
    for _ in range(n):
        trees = [grammar.sentence().children[0] for _ in range(sentences_per_line)]  # the S under ROOT
        tree = Node("ROOT", [trees[0] if len(trees) == 1 else Node("S", trees)])
        out.append((" ".join(tree.leaves()), " ".join(translate(tree)), tree.bracketed()))
    return out


def write_corpus(out_dir: str, sizes=(("train", 2000), ("valid", 200), ("test", 200)), seed: int = 1,
                 src: str = "src", tgt: str = "tgt", sentences_per_line: int = 1) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for i, (split, n) in enumerate(sizes):
        examples = generate(n, seed * 1000 + i, sentences_per_line)
        with open(os.path.join(out_dir, f"{split}.{src}"), "w") as fs, \
                open(os.path.join(out_dir, f"{split}.{tgt}"), "w") as ft, \
                open(os.path.join(out_dir, f"{split}.{src}.tree"), "w") as ftree:
            for s, t, tree in examples:
                fs.write(s + "\n")
                ft.write(t + "\n")
                ftree.write(tree + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--valid", type=int, default=200)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--src", default="src", help="source language suffix")
    p.add_argument("--tgt", default="tgt", help="target language suffix")
    p.add_argument("--sentences-per-line", type=int, default=1, help="sentences joined into one line")
    a = p.parse_args(argv)
    if a.sentences_per_line < 1:
        p.error("--sentences-per-line must be at least 1")
    write_corpus(a.out, (("train", a.train), ("valid", a.valid), ("test", a.test)), a.seed, a.src, a.tgt,
                 a.sentences_per_line)


if __name__ == "__main__":
    main()
