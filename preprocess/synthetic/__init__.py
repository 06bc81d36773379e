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

``readings`` gives every tree the grammar can generate for a source string, and
``attachment_ambiguous`` says whether a gold tree's string has readings with different
targets (a PP the grammar could attach to the noun phrase or to the verb phrase): the
sentences on which only the tree tells the readings apart (the demo scores them apart).

Run ``python -m mgsa_preprocess.synthetic --out DIR`` (its command line: __main__.py) to write
``{train,valid,test}.{src,tgt}`` and the gold trees ``{split}.src.tree``; ``--lang zh`` writes
them with a Chinese source (synthetic_zh.py). ``--cyrillic`` writes the target in Cyrillic
letters (``cyrillic``: the invented words letter by letter, capitals kept), a stand-in for
Russian text in the English-Russian recipe's tests.
"""

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


# Latin -> Cyrillic, a letter each (x: two), for the invented target words: the same corpus with
# a target in another script, generated rather than taken from any Russian text.
CYRILLIC = dict(zip("abcdefghijklmnopqrstuvwyz", "абцдефгхийклмнопщрстувшыз"), x="кс")


def cyrillic(text: str) -> str:
    """`text` with its Latin letters in Cyrillic (CYRILLIC), capitals kept; other characters as they are."""
    def letter(c):
        low = CYRILLIC.get(c.lower(), c)
        return low.capitalize() if c.isupper() else low
    return "".join(letter(c) for c in text)


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


class Lexicon:
    """The target words of the grammar's default target language (the invented one of the tables
    above); another target (synthetic_zh's English-like one) subclasses it."""

    def word(self, leaf: Node) -> str:
        w = leaf.children
        if leaf.label == "VBZ" and w not in AUXILIARIES:
            return next(t for s, t in PRESENT.values() if s == w)
        if leaf.label == "VBN":
            return next(t for s, t in PARTICIPLE.values() if s == w)
        for table in (DETERMINERS, ADJECTIVES, NOUNS, NAMES, VERBS, AUXILIARIES, ADVERBS):
            if w in table:
                return table[w]
        return w  # punctuation

    def preposition(self, prep: str, attached_to: str) -> str:
        if prep == AGENT[0]:
            return AGENT[1]
        vp_word, np_word = PREPOSITIONS[prep]
        return np_word if attached_to == "NP" else vp_word


INVENTED = Lexicon()


def translate(node: Node, lexicon: Lexicon = INVENTED) -> List[str]:
    """Target words for a subtree, by the reordering rules of the module docstring."""
    if node.is_preterminal:
        return [lexicon.word(node)]
    labels = [c.label for c in node.children]
    parts = [translate_pp(c, node.label, lexicon) if c.label == "PP" else translate(c, lexicon)
             for c in node.children]
    if node.label == "VP":  # verb-final
        order = list(range(1, len(parts))) + [0]
    elif node.label == "NP" and labels == ["DT", "JJ", "NN"]:
        order = [0, 2, 1]
    elif node.label == "NP" and labels == ["NP", "PP"]:  # noun-attached PP moves first
        order = [1, 0]
    else:
        order = list(range(len(parts)))
    return [w for i in order for w in parts[i]]


def translate_pp(pp: Node, attached_to: str, lexicon: Lexicon = INVENTED) -> List[str]:
    prep, np = pp.children
    return [lexicon.preposition(prep.children, attached_to)] + translate(np, lexicon)


# --- attachment ambiguity: the readings the grammar gives a source string ----------------------
# A recognizer that mirrors Grammar's rules and depth limits exactly (noun_phrase(d) takes a PP
# only below max_depth, prep_phrase(d) takes noun_phrase(d + 1)), so that "the grammar could
# attach this PP elsewhere" means: Grammar could have generated the same words with that tree.

def _base_nps(w: List[str], i: int):
    if i < len(w) and w[i] in NAMES:
        yield i + 1, Node("NP", [Node("NNP", w[i])])
    if i + 1 < len(w) and w[i] in DETERMINERS:
        if w[i + 1] in NOUNS:
            yield i + 2, Node("NP", [Node("DT", w[i]), Node("NN", w[i + 1])])
        if i + 2 < len(w) and w[i + 1] in ADJECTIVES and w[i + 2] in NOUNS:
            yield i + 3, Node("NP", [Node("DT", w[i]), Node("JJ", w[i + 1]), Node("NN", w[i + 2])])


def _noun_phrases(w, i, depth, max_depth):
    for end, base in _base_nps(w, i):
        yield end, base
        if depth < max_depth:
            for end2, pp in _prep_phrases(w, end, depth + 1, max_depth):
                yield end2, Node("NP", [base, pp])


def _prep_phrases(w, i, depth, max_depth, prepositions=PREPOSITIONS):
    if i < len(w) and w[i] in prepositions:
        for end, np in _noun_phrases(w, i + 1, depth + 1, max_depth):
            yield end, Node("PP", [Node("IN", w[i]), np])


def _optional_pp(w, i, j, depth, max_depth):
    """[] where i == j, else every [PP] of prep_phrase(depth) over w[i:j]."""
    if i == j:
        yield []
    for end, pp in _prep_phrases(w, i, depth, max_depth):
        if end == j:
            yield [pp]


def _verb_phrases(w, i, j, max_depth):
    """Every VP of Grammar.verb_phrase over w[i:j]."""
    present = {s for s, _ in PRESENT.values()}
    participles = {s for s, _ in PARTICIPLE.values()}
    if i < j and (w[i] in VERBS or w[i] in present):  # active: V NP [PP]
        head = Node("VBD" if w[i] in VERBS else "VBZ", w[i])
        for end, np in _noun_phrases(w, i + 1, 1, max_depth):
            for pp in _optional_pp(w, end, j, 1, max_depth):
                yield Node("VP", [head, np] + pp)
    if i + 2 < j and w[i] in AUXILIARIES and w[i + 1] in participles:  # passive: aux (VP VBN PP(by NP) [PP])
        aux = Node("VBD" if w[i] == "was" else "VBZ", w[i])
        for end, agent in _prep_phrases(w, i + 2, 1, max_depth, prepositions={AGENT[0]: None}):
            for pp in _optional_pp(w, end, j, 2, max_depth):
                yield Node("VP", [aux, Node("VP", [Node("VBN", w[i + 1]), agent] + pp)])


def _sentences(w: List[str], max_depth: int):
    """Every S of Grammar.sentence over the words of one sentence."""
    if not w or w[-1] != ".":
        return
    openers = [(0, [])]
    if w[0] in ADVERBS:
        openers.append((1, [Node("ADVP", [Node("RB", w[0])])]))
    openers += [(end + 1, [pp, Node(",", ",")]) for end, pp in _prep_phrases(w, 0, 2, max_depth)
                if end < len(w) and w[end] == ","]
    for start, opener in openers:
        for end, subject in _noun_phrases(w, start, 1, max_depth):
            for vp in _verb_phrases(w, end, len(w) - 1, max_depth):
                yield Node("S", opener + [subject, vp, Node(".", ".")])


def readings(sentence: str, max_depth: int = 3) -> List[Node]:
    """Every tree (ROOT (S ...)) the grammar can generate for one source sentence; several only
    where a PP can attach to a noun phrase or to the verb phrase (nothing else in the grammar is
    ambiguous). [] for a sentence the grammar cannot generate."""
    return [Node("ROOT", [s]) for s in _sentences(sentence.split(), max_depth)]


def read_tree(text: str) -> Node:
    """A Node from Penn Treebank brackets as `Node.bracketed` writes them."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    stack: List[Node] = []
    for k, tok in enumerate(tokens):
        if tok == "(":
            stack.append(Node(tokens[k + 1], []))
        elif tok == ")":
            node = stack.pop()
            if not stack:
                return node
            stack[-1].children.append(node)
        elif tokens[k - 1] != "(":  # a word: its pre-terminal's only child
            stack[-1].children = tok
    raise ValueError(f"unbalanced brackets: {text!r}")


def attachment_ambiguous(tree) -> bool:
    """Whether a gold tree's source string is attachment-ambiguous: the grammar has another
    tree for the same words that attaches a PP to the noun phrase instead of the verb phrase
    (or the other way), so another target, and only the tree tells the two apart. `tree`: a
    Node or its brackets, one sentence or a line of several (ROOT (S (S ...) (S ...))), whose
    sentences are decided one by one. ValueError when the tree is not one the grammar generates."""
    root = read_tree(tree) if isinstance(tree, str) else tree
    top = root.children[0]
    sentences = top.children if all(c.label == "S" for c in top.children) else [top]
    ambiguous = False
    for s in sentences:
        trees = readings(" ".join(s.leaves()))
        gold = Node("ROOT", [s]).bracketed()
        if gold not in {t.bracketed() for t in trees}:
            raise ValueError(f"not a tree of the grammar (preprocess/synthetic/): {gold}")
        ambiguous = ambiguous or len({tuple(translate(t)) for t in trees}) > 1
    return ambiguous


def ambiguous_lines(tree_path: str) -> List[int]:
    """The line numbers (1-based) of a gold tree file whose source is attachment-ambiguous."""
    with open(tree_path, encoding="utf-8") as f:
        return [i for i, line in enumerate(f, 1) if attachment_ambiguous(line.strip())]


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
                 src: str = "src", tgt: str = "tgt", sentences_per_line: int = 1,
                 cyrillic_target: bool = False) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for i, (split, n) in enumerate(sizes):
        examples = generate(n, seed * 1000 + i, sentences_per_line)
        with open(os.path.join(out_dir, f"{split}.{src}"), "w", encoding="utf-8") as fs, \
                open(os.path.join(out_dir, f"{split}.{tgt}"), "w", encoding="utf-8") as ft, \
                open(os.path.join(out_dir, f"{split}.{src}.tree"), "w", encoding="utf-8") as ftree:
            for s, t, tree in examples:
                fs.write(s + "\n")
                ft.write((cyrillic(t) if cyrillic_target else t) + "\n")
                ftree.write(tree + "\n")
