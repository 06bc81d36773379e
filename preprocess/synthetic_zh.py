"""The project's grammar (synthetic/) with a Chinese source: ``python -m mgsa_preprocess.synthetic
--lang zh --out DIR``.

Each sentence is drawn by the same Grammar and its tree rewritten word for word and label for
label: the source is Chinese words (characters, most of two or three) under Chinese phrase labels
(IP, NP, VP, PP, DNP, ADJP, ADVP; tags DT, JJ, NN, NR, VV, SB, P, DEG, AD, PU), the target is
English words put in order by the grammar's own rules (synthetic.translate: verb-final verb
phrases, the adjective after its noun, a noun-attached PP first and with another preposition), so
the PP attachment still decides the target while the Chinese string cannot. Chinese word order
follows the grammar (synthetic, not natural Chinese), with two Chinese touches: the adjective is
a DNP with 的, ``NP(DT DNP(ADJP(JJ) DEG) NN)``, and the passive is ``VP(SB VP(VV PP(由 NP) [PP]))``.

``{split}.src`` is written as a user's raw Chinese is, without spaces between words;
``{split}.src.tree`` holds the gold trees, whose leaves are the words; ``lexicon.dict`` is a jieba
user dictionary of every word, with which ``mgsa-segment-zh --user-dict lexicon.dict`` cuts the
source into exactly the trees' leaves (tests/preprocess/test_synthetic_zh.py checks every sentence).
"""

import os
from typing import List, Tuple

from . import synthetic
from .synthetic import (ADJECTIVES, ADVERBS, AGENT, DETERMINERS, NAMES, NOUNS, PARTICIPLE, PREPOSITIONS, PRESENT,
                        VERBS, Grammar, Lexicon, Node)

ZH_DETERMINERS = {"the": "那个", "a": "一个", "every": "每个", "some": "某个"}
ZH_ADJECTIVES = {"old": "年老", "red": "红色", "small": "矮小", "quiet": "安静", "clever": "聪明", "green": "绿色"}
ZH_NOUNS = {
    "dog": "小狗", "cat": "小猫", "farmer": "农夫", "telescope": "望远镜", "garden": "花园", "river": "河流",
    "teacher": "老师", "book": "书本", "hill": "山丘", "friend": "朋友", "letter": "信件", "market": "市场",
}
ZH_NAMES = {"Anna": "安娜", "Boris": "鲍里斯", "Clara": "克拉拉", "David": "大卫"}
# the verb's past (with 了), present and passive forms, keyed by the English past form
ZH_VERBS = {"saw": "看见", "found": "找到", "liked": "喜欢", "watched": "观看", "carried": "携带", "met": "遇见"}
ZH_AUXILIARIES = {"was": "曾被", "is": "常被"}  # the passive's marker, past and present
ZH_PREPOSITIONS = {"with": "带着", "near": "靠近", "behind": "跟随", "on": "站在", AGENT[0]: "由"}
ZH_ADVERBS = {"then": "然后", "often": "经常"}
DE = "的"  # DEG: the adjective's DNP
PUNCTUATION = {",": "，", ".": "。"}
PHRASES = {"ROOT": "ROOT", "S": "IP", "NP": "NP", "VP": "VP", "PP": "PP", "ADVP": "ADVP"}
# English-like target: the NP-attached preposition takes another word, as the invented target's does
EN_NOUN_ATTACHED = {"with": "having", "near": "beside", "behind": "after", "on": "upon"}
# a user-dictionary frequency far above the dictionary's own words (jieba's total is about 6e7):
# jieba's best path then goes through the lexicon's words wherever they cover the text
DICT_FREQUENCY = 10 ** 6


class EnglishLike(Lexicon):
    """Target words: the grammar's English words, a noun-attached preposition as EN_NOUN_ATTACHED."""

    def word(self, leaf: Node) -> str:
        return leaf.children

    def preposition(self, prep: str, attached_to: str) -> str:
        return EN_NOUN_ATTACHED[prep] if attached_to == "NP" and prep != AGENT[0] else prep


ENGLISH_LIKE = EnglishLike()
_PRESENT_TO_PAST = {present: past for past, (present, _) in PRESENT.items()}
_PARTICIPLE_TO_PAST = {participle: past for past, (participle, _) in PARTICIPLE.items()}


def _leaf(node: Node) -> Node:
    tag, w = node.label, node.children
    if tag in ("VBD", "VBZ") and w in ZH_AUXILIARIES:
        return Node("SB", ZH_AUXILIARIES[w])
    if tag == "VBD":
        return Node("VV", ZH_VERBS[w] + "了")
    if tag == "VBZ":
        return Node("VV", ZH_VERBS[_PRESENT_TO_PAST[w]])
    if tag == "VBN":
        return Node("VV", ZH_VERBS[_PARTICIPLE_TO_PAST[w]])
    table = {"DT": ZH_DETERMINERS, "JJ": ZH_ADJECTIVES, "NN": ZH_NOUNS, "NNP": ZH_NAMES, "IN": ZH_PREPOSITIONS,
             "RB": ZH_ADVERBS, ",": PUNCTUATION, ".": PUNCTUATION}[tag]
    return Node({"NNP": "NR", "IN": "P", "RB": "AD", ",": "PU", ".": "PU"}.get(tag, tag), table[w])


def chinese_tree(node: Node) -> Node:
    """The Chinese tree of one of the grammar's trees (labels and words rewritten, 的 added)."""
    if node.is_preterminal:
        return _leaf(node)
    kids = [chinese_tree(c) for c in node.children]
    if node.label == "NP" and [c.label for c in node.children] == ["DT", "JJ", "NN"]:
        kids = [kids[0], Node("DNP", [Node("ADJP", [kids[1]]), Node("DEG", DE)]), kids[2]]
    return Node(PHRASES[node.label], kids)


def words() -> List[str]:
    """Every Chinese word the trees can hold (the user dictionary's words)."""
    verbs = [v + suffix for v in ZH_VERBS.values() for suffix in ("", "了")]
    tables = (ZH_DETERMINERS, ZH_ADJECTIVES, ZH_NOUNS, ZH_NAMES, ZH_AUXILIARIES, ZH_PREPOSITIONS, ZH_ADVERBS)
    return sorted({w for t in tables for w in t.values()} | set(verbs) | {DE})


def generate(n: int, seed: int, sentences_per_line: int = 1) -> List[Tuple[str, str, str]]:
    """`n` examples of (Chinese source without spaces, English-like target, Chinese tree), from the
    grammar's trees for `seed` (the same trees as synthetic.generate draws)."""
    grammar = Grammar(seed)
    out = []
    for _ in range(n):
        trees = [grammar.sentence().children[0] for _ in range(sentences_per_line)]
        tree = Node("ROOT", [trees[0] if len(trees) == 1 else Node("S", trees)])
        zh = chinese_tree(tree)
        out.append(("".join(zh.leaves()), " ".join(synthetic.translate(tree, ENGLISH_LIKE)), zh.bracketed()))
    return out


def write_user_dict(path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for w in words():
            f.write(f"{w} {DICT_FREQUENCY}\n")


def write_corpus(out_dir: str, sizes=(("train", 2000), ("valid", 200), ("test", 200)), seed: int = 1,
                 src: str = "src", tgt: str = "tgt", sentences_per_line: int = 1) -> None:
    """synthetic.write_corpus's files with a Chinese source, and the user dictionary `lexicon.dict`."""
    os.makedirs(out_dir, exist_ok=True)
    for i, (split, n) in enumerate(sizes):
        examples = generate(n, seed * 1000 + i, sentences_per_line)
        with open(os.path.join(out_dir, f"{split}.{src}"), "w", encoding="utf-8") as fs, \
                open(os.path.join(out_dir, f"{split}.{tgt}"), "w", encoding="utf-8") as ft, \
                open(os.path.join(out_dir, f"{split}.{src}.tree"), "w", encoding="utf-8") as ftree:
            for s, t, tree in examples:
                fs.write(s + "\n")
                ft.write(t + "\n")
                ftree.write(tree + "\n")
    write_user_dict(os.path.join(out_dir, "lexicon.dict"))

