"""Small Chinese trees in the Penn Chinese Treebank's labels, written for the tests (no treebank text):
IP, VP, NP, CP, DNP, QP, CLP, LCP, PP, ADVP over segmented words (NR, NN, VV, DEG, DEC, CD, M, LC,
P, AD, PU), with full-width punctuation. `corpus` writes {split}.zh (the words, space-separated,
as a segmenter's output), {split}.en (a target) and {split}.zh.tree."""

import os
import random

from mgsa_preprocess.synthetic import Node

NAMES = ["张伟", "李娜", "王芳", "北京", "上海"]
NOUNS = ["老师", "学生", "朋友", "房间", "城市", "图书馆", "苹果", "电脑", "问题", "公司"]
VERBS = ["喜欢", "看见", "打开", "离开", "研究", "帮助"]
ADVERBS = ["已经", "常常", "也"]
NUMBERS = ["三", "五", "两"]
MEASURES = ["个", "本", "位"]
LOCALIZERS = ["里", "上"]
EN = {w: f"e{i}" for i, w in enumerate(NAMES + NOUNS + VERBS + ADVERBS + NUMBERS + MEASURES + LOCALIZERS)}


class Grammar:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def pick(self, words):
        return self.rng.choice(words)

    def np(self, depth=0) -> Node:
        r = self.rng.random() if depth < 2 else 0.0
        if r < 0.35:
            return Node("NP", [Node("NR" if self.rng.random() < 0.5 else "NN",
                                    self.pick(NAMES) if self.rng.random() < 0.5 else self.pick(NOUNS))])
        if r < 0.55:  # 我们的老师: DNP
            return Node("NP", [Node("DNP", [self.np(depth + 1), Node("DEG", "的")]), Node("NN", self.pick(NOUNS))])
        if r < 0.75:  # 三个学生: QP
            return Node("NP", [Node("QP", [Node("CD", self.pick(NUMBERS)), Node("CLP", [Node("M", self.pick(MEASURES))])]),
                               Node("NN", self.pick(NOUNS))])
        # 打开电脑的学生: a relative clause, CP
        vp = Node("VP", [Node("VV", self.pick(VERBS)), Node("NP", [Node("NN", self.pick(NOUNS))])])
        return Node("NP", [Node("CP", [Node("IP", [vp]), Node("DEC", "的")]), Node("NN", self.pick(NOUNS))])

    def vp(self) -> Node:
        r = self.rng.random()
        core = Node("VP", [Node("VV", self.pick(VERBS)), self.np(1)])
        if r < 0.3:
            return Node("VP", [Node("ADVP", [Node("AD", self.pick(ADVERBS))]), core])
        if r < 0.5:  # 在图书馆里: PP over LCP
            lcp = Node("LCP", [self.np(2), Node("LC", self.pick(LOCALIZERS))])
            return Node("VP", [Node("PP", [Node("P", "在"), lcp]), core])
        return core

    def sentence(self) -> Node:
        return Node("IP", [self.np(), self.vp(), Node("PU", "。" if self.rng.random() < 0.8 else "！")])


def generate(n: int, seed: int):
    g = Grammar(seed)
    return [g.sentence() for _ in range(n)]


def corpus(out_dir: str, sizes, seed: int = 1):
    """{split: [tree]}, the files written as the docstring says."""
    os.makedirs(out_dir, exist_ok=True)
    out = {}
    for i, (split, n) in enumerate(sizes):
        trees = generate(n, seed * 1000 + i)
        out[split] = trees
        with open(os.path.join(out_dir, f"{split}.zh"), "w", encoding="utf-8") as fs, \
                open(os.path.join(out_dir, f"{split}.en"), "w", encoding="utf-8") as ft, \
                open(os.path.join(out_dir, f"{split}.zh.tree"), "w", encoding="utf-8") as ftree:
            for t in trees:
                words = t.leaves()
                fs.write(" ".join(words) + "\n")
                ft.write(" ".join(EN.get(w, "x") for w in reversed(words)) + "\n")
                ftree.write(f"(ROOT {t.bracketed()})\n")
    return out
