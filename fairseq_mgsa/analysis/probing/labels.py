"""Labels of the five probing tasks of the paper's Table 5, read from bracketed trees.

Tasks (Shi, Padhi & Knight 2016; definitions in docs/analyses.md, Probing), coarse to fine:

    Voice  sentence  active / passive: passive iff the main clause's verb group holds a form of
                     "be" or "get" whose VP complement is headed by VBN; no label when the top
                     constituent has no VP child (fragments, coordinated clauses)
    Tense  sentence  past / non-past of the first finite verb of the top-level VP (VBD -> past;
                     VBZ, VBP, MD -> non-past); no label when there is no finite main verb
    TSS    sentence  the labels of the top constituent's children ("NP VP ."); the 19 most
                     frequent sequences of the training split are classes, the rest OTHER
    SPC    word      the label of the parent of the word's pre-terminal
    POS    word      the pre-terminal's label

Trees are delimited, their leaves checked against the text and their partition built
with mgsa-preprocess's reader (mgsa_preprocess.trees). Its normalisation collapses a
constituent over one word into the word's pre-terminal, which loses the parent SPC
needs ((NP (NNP Bush)) would give Bush the SPC of the clause): the labels are read
from a second, unary-preserving reading of the same tree text with the same label
stripping (NP-SBJ-1 -> NP) and the same removal of -NONE- elements and of constituents
emptied by it.
"""

import collections
import itertools
import random
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.text_files import lines
from mgsa_preprocess.trees import (NONE_LABEL, ROOT_LABELS, Node, check_leaves, iter_tree_texts, parse_tree,
                                   strip_label)

TASKS = ("voice", "tense", "tss", "spc", "pos")
WORD_TASKS = frozenset(("spc", "pos"))
TASK_NAMES = {"voice": "Voice", "tense": "Tense", "tss": "TSS", "spc": "SPC", "pos": "POS"}
TSS_CLASSES = 19  # + OTHER, as Conneau et al.'s TopConst
OTHER = "OTHER"
BE_GET = frozenset("be am is are was were been being 's 're 'm get gets got gotten getting".split())
VERB_TAGS = frozenset(("VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"))
FINITE = {"VBD": "past", "VBZ": "non-past", "VBP": "non-past", "MD": "non-past"}
SPLITS = ("train", "valid", "test")
NO_LABEL = {"voice": "no verb phrase under the top constituent", "tense": "no finite main verb"}

# A raw node: (label, children) with children a list of raw nodes, or the word (str) of a pre-terminal.
_TOKENS = re.compile(r"[()]|[^\s()]+")


class ProbeError(PreprocessError):
    """Bad input to mgsa-probe: printed as one line naming the file (and line)."""


def read_raw(text: str):
    """The tree as nested (label, children), unary constituents kept; outer ROOT/unlabeled
    brackets around one constituent removed, -NONE- elements and constituents left empty by
    their removal dropped (as mgsa_preprocess.trees.parse_tree does). Called only on trees
    parse_tree has accepted, so the brackets are balanced and well formed."""
    tokens = _TOKENS.findall(text)
    stack = [["", []]]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "(":
            label = tokens[i + 1] if i + 1 < len(tokens) and tokens[i + 1] not in "()" else ""
            stack.append([label, []])
            i += 2 if label else 1
        elif tok == ")":
            label, children = stack.pop()
            tag = strip_label(label)
            keep = children and tag != NONE_LABEL
            if keep:
                stack[-1][1].append((tag, children[0] if isinstance(children[0], str) else children))
            i += 1
        else:
            stack[-1][1] = [tok]
            i += 1
    node = stack[0][1][0] if stack[0][1] else None
    while node is not None and node[0] in ROOT_LABELS and not isinstance(node[1], str) and len(node[1]) == 1:
        node = node[1][0]
    return node


def _is_word(node) -> bool:
    return isinstance(node[1], str)


def main_vp(top):
    """The first VP child of the top clause (None if it has none, e.g. a fragment or coordinated clauses)."""
    if top is None or _is_word(top):
        return None
    return next((c for c in top[1] if c[0] == "VP"), None)


def _verb_and_complement(vp):
    """(first verbal pre-terminal child, first VP child) of a VP."""
    verb = next((c for c in vp[1] if _is_word(c) and c[0] in VERB_TAGS), None)
    complement = next((c for c in vp[1] if not _is_word(c) and c[0] == "VP"), None)
    return verb, complement


def voice(top) -> Optional[str]:
    vp = main_vp(top)
    if vp is None:
        return None
    while vp is not None:  # down the verb group: was -> (VP been -> (VP seen ...))
        verb, complement = _verb_and_complement(vp)
        if verb is not None and verb[1].lower() in BE_GET and complement is not None:
            head, _ = _verb_and_complement(complement)
            if head is not None and head[0] == "VBN":
                return "passive"
        vp = complement
    return "active"


def tense(top) -> Optional[str]:
    vp = main_vp(top)
    while vp is not None:
        verb, complement = _verb_and_complement(vp)
        if verb is not None:
            return FINITE.get(verb[0])  # None for a non-finite first verb (to-infinitive, gerund)
        vp = complement  # a coordinated VP: (VP (VP ...) (CC and) (VP ...))
    return None


def top_sequence(top) -> str:
    if _is_word(top):
        return top[0]
    return " ".join(c[0] for c in top[1])


def word_labels(top) -> Tuple[List[str], List[str]]:
    """(SPC, POS) of every word in order; the parent of a one-word tree's pre-terminal is ROOT."""
    spc, pos = [], []

    def walk(node, parent):
        if _is_word(node):
            spc.append(parent)
            pos.append(node[0])
        else:
            for child in node[1]:
                walk(child, node[0])

    walk(top, "ROOT")
    return spc, pos


@dataclass
class Sentence:
    words: List[str]
    top: Optional[Node]  # normalised tree (mgsa_preprocess.trees), for the partition
    labels: Dict[str, object]  # task -> label (a str; a list of str for word tasks; None: no label)


def read_lines(path: str, option: str) -> List[str]:
    """The file's lines, decoded as UTF-8 one at a time (mgsa_preprocess.text_files), so that a byte
    that is not UTF-8 is an error naming its line and column."""
    return [line for _, line in lines(path, f"the {option} file")]


def read_tree_texts(trees_path: str) -> List[Tuple[int, str]]:
    """(line, tree text) of every tree of the file."""
    return list(iter_tree_texts(read_lines(trees_path, "--trees"), trees_path))


def read_corpus(trees_path: str, text_path: Optional[str] = None,
                trees: Optional[List[Tuple[int, str]]] = None) -> List[Sentence]:
    """One Sentence per tree of `trees_path` (`trees`: its read_tree_texts, if read already);
    words from `text_path` (one sentence a line) when given, which must have as many lines as
    there are trees and the trees' leaves as words."""
    if trees is None:
        trees = read_tree_texts(trees_path)
    words_of = None
    if text_path is not None:
        words_of = [line.split() for line in read_lines(text_path, "--text")]
        if len(words_of) != len(trees):
            raise ProbeError(f"{len(trees)} trees, but {text_path} has {len(words_of)} lines: one tree per "
                             f"sentence is expected, in the same order", trees_path)
    sentences = []
    for i, (line, text) in enumerate(trees):
        top, leaves = parse_tree(text, trees_path, line)
        if top is None:
            raise ProbeError("empty tree: every sentence needs a tree with words", trees_path, line)
        words = leaves
        if words_of is not None:
            check_leaves(leaves, words_of[i], trees_path, line, text_path, i + 1)
            words = words_of[i]
        raw = read_raw(text)
        spc, pos = word_labels(raw)
        sentences.append(Sentence(words, top, {"voice": voice(raw), "tense": tense(raw), "tss": top_sequence(raw),
                                               "spc": spc, "pos": pos}))
    return sentences


def split_sizes(n: int, ratio: Sequence[int] = (10, 1, 1)) -> Tuple[int, int, int]:
    """(train, valid, test) sizes of n sentences cut by `ratio`."""
    n_valid, n_test = (n * ratio[1]) // sum(ratio), (n * ratio[2]) // sum(ratio)
    return n - n_valid - n_test, n_valid, n_test


def split_indices(n: int, seed: int, ratio: Sequence[int] = (10, 1, 1)) -> Dict[str, List[int]]:
    """A seeded shuffle of range(n) cut train:valid:test by `ratio` (each split keeps corpus order)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    n_train, n_valid, _ = split_sizes(n, ratio)
    cuts = {"train": order[:n_train], "valid": order[n_train:n_train + n_valid], "test": order[n_train + n_valid:]}
    return {k: sorted(v) for k, v in cuts.items()}


def check_split(n: int, ratio: Sequence[int], path: str):
    """An empty split (too few trees for the ratio) is an error naming the counts and the minimum:
    without valid there is no early stopping, without test no figure (and no majority baseline)."""
    sizes = split_sizes(n, ratio)
    if min(sizes) > 0:
        return
    least = next(m for m in itertools.count(n + 1) if min(split_sizes(m, ratio)) > 0)  # valid, test grow with m
    text = ":".join(map(str, ratio))
    raise ProbeError(f"{n} trees split {text} give train {sizes[0]}, valid {sizes[1]}, test {sizes[2]}: every split "
                     f"needs a sentence, which takes {least} trees at least with --split {text}", path)


@dataclass
class TaskData:
    name: str
    classes: List[str]
    ids: Dict[str, List[int]]  # split -> sentence ids that have a label
    labels: Dict[str, list]  # split -> class ids (sentence task) or per-sentence lists (word task)
    dropped: int = 0  # sentences without a label (Voice / Tense: no main VP or no finite verb)
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)  # split -> class -> count

    @property
    def word_level(self) -> bool:
        return self.name in WORD_TASKS

    def flat(self, split) -> List[int]:
        return [c for x in self.labels[split] for c in x] if self.word_level else list(self.labels[split])

    def majority(self) -> Tuple[str, float]:
        """The training split's most frequent class and its accuracy on test (%)."""
        train = collections.Counter(self.flat("train"))
        top = max(sorted(train), key=lambda c: train[c])
        test = self.flat("test")
        return self.classes[top], 100.0 * sum(c == top for c in test) / max(1, len(test))


def build_task(name: str, sentences: List[Sentence], splits: Dict[str, List[int]], path: str) -> TaskData:
    if name not in TASKS:
        raise ProbeError(f"unknown task {name!r}; tasks: {', '.join(TASKS)}")
    raw = {s: [(i, sentences[i].labels[name]) for i in ids] for s, ids in splits.items()}
    dropped = sum(lab is None for pairs in raw.values() for _, lab in pairs)
    raw = {s: [(i, lab) for i, lab in pairs if lab is not None] for s, pairs in raw.items()}
    for s in SPLITS:  # check_split saw sentences in every split; here: sentences with this task's label
        if not raw[s]:
            raise ProbeError(f"task {TASK_NAMES[name]}: none of the {len(splits[s])} sentences of the {s} split has "
                             f"a label ({NO_LABEL.get(name, 'none read')}): give more trees or leave the task out "
                             f"with --tasks", path)
    if name == "tss":  # the training split's 19 most frequent sequences, the rest OTHER
        freq = collections.Counter(lab for _, lab in raw["train"])
        keep = set(sorted(freq, key=lambda c: (-freq[c], c))[:TSS_CLASSES])
        raw = {s: [(i, lab if lab in keep else OTHER) for i, lab in pairs] for s, pairs in raw.items()}
    train_labels = [x for _, lab in raw["train"] for x in (lab if name in WORD_TASKS else [lab])]
    if not train_labels:
        raise ProbeError(f"task {TASK_NAMES[name]}: no training sentence has a label", path)
    classes = sorted(set(train_labels))
    if len(classes) < 2:
        raise ProbeError(f"task {TASK_NAMES[name]} has one class ({classes[0]!r}) in all {len(raw['train'])} "
                         f"training sentences: a probe needs at least two; leave it out with --tasks", path)
    index = {c: k for k, c in enumerate(classes)}
    unseen = index.get(OTHER)  # a class absent from train: counted under OTHER if there is one, else its own id
    for c in sorted({x for pairs in raw.values() for _, lab in pairs
                     for x in (lab if name in WORD_TASKS else [lab])} - set(classes)):
        index[c] = unseen if unseen is not None else len(classes)
        if unseen is None:
            classes.append(c)  # never predicted right by a classifier trained without it: counts as an error
    data = TaskData(name, classes, {s: [i for i, _ in pairs] for s, pairs in raw.items()},
                    {s: [([index[x] for x in lab] if name in WORD_TASKS else index[lab]) for _, lab in pairs]
                     for s, pairs in raw.items()}, dropped)
    for s in SPLITS:
        counts = collections.Counter(data.flat(s))
        data.counts[s] = {classes[k]: counts[k] for k in sorted(counts)}
    return data
