"""The grammar with a Chinese source (preprocess/synthetic_zh.py): the segmenter with the written
user dictionary gives back exactly the gold trees' leaves, sentence by sentence."""

import subprocess
import sys

import pytest

from mgsa_preprocess import synthetic, synthetic_zh
from mgsa_preprocess.segment_zh import HAN, Segmenter
from mgsa_preprocess.synthetic import read_tree
from tests.paths import checkout_env


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def test_every_english_word_has_a_chinese_one():
    z, s = synthetic_zh, synthetic
    assert set(z.ZH_DETERMINERS) == set(s.DETERMINERS) and set(z.ZH_ADJECTIVES) == set(s.ADJECTIVES)
    assert set(z.ZH_NOUNS) == set(s.NOUNS) and set(z.ZH_NAMES) == set(s.NAMES) and set(z.ZH_VERBS) == set(s.VERBS)
    assert set(z.ZH_PREPOSITIONS) == set(s.PREPOSITIONS) | {s.AGENT[0]} and set(z.ZH_ADVERBS) == set(s.ADVERBS)
    assert set(z.EN_NOUN_ATTACHED) == set(s.PREPOSITIONS)


def test_a_tree_by_hand():
    tree = read_tree("(ROOT (S (NP (DT the) (JJ old) (NN farmer)) (VP (VBD saw) (NP (NP (NNP Anna)) "
                     "(PP (IN with) (NP (DT a) (NN book))))) (. .)))")
    zh = synthetic_zh.chinese_tree(tree)
    assert zh.bracketed() == ("(ROOT (IP (NP (DT 那个) (DNP (ADJP (JJ 年老)) (DEG 的)) (NN 农夫)) (VP (VV 看见了) "
                              "(NP (NP (NR 安娜)) (PP (P 带着) (NP (DT 一个) (NN 书本))))) (PU 。)))")
    # the grammar's rules with English words: verb-final, adjective after its noun, the
    # noun-attached PP first with its other preposition
    assert synthetic.translate(tree, synthetic_zh.ENGLISH_LIKE) == \
        "the farmer old having a book Anna saw .".split()


def test_generated_corpus_round_trips_through_the_segmenter(tmp_path):
    out = tmp_path / "zh"
    r = subprocess.run([sys.executable, "-m", "mgsa_preprocess.synthetic", "--lang", "zh", "--out", out,
                        "--train", "400", "--valid", "50", "--test", "50"], env=checkout_env(), cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    segmenter = Segmenter(user_dict=str(out / "lexicon.dict"))
    plain = Segmenter()
    differs = 0
    for split, n in (("train", 400), ("valid", 50), ("test", 50)):
        src = (out / f"{split}.src").read_text(encoding="utf-8").splitlines()
        trees = (out / f"{split}.src.tree").read_text(encoding="utf-8").splitlines()
        tgt = (out / f"{split}.tgt").read_text(encoding="utf-8").splitlines()
        assert len(src) == len(trees) == len(tgt) == n
        for s, t in zip(src, trees):
            leaves = read_tree(t).leaves()
            assert " " not in s and s == "".join(leaves)  # raw Chinese: no spaces between words
            assert segmenter.tokens(s) == leaves, s
            differs += plain.tokens(s) != leaves
    assert differs > 0  # the user dictionary is what makes the gold segmentation (not jieba alone)


def test_lines_of_several_sentences_round_trip_and_use_chinese_labels(tmp_path):
    synthetic_zh.write_user_dict(str(tmp_path / "lexicon.dict"))
    segmenter = Segmenter(user_dict=str(tmp_path / "lexicon.dict"))
    labels = set()
    for src, tgt, tree in synthetic_zh.generate(60, seed=7, sentences_per_line=3):
        node = read_tree(tree)
        assert node.children[0].label == "IP" and [c.label for c in node.children[0].children] == ["IP"] * 3
        assert segmenter.tokens(src) == node.leaves()
        stack = [node]
        while stack:
            n = stack.pop()
            labels.add(n.label)
            if not n.is_preterminal:
                stack += n.children
    assert {"IP", "NP", "VP", "PP", "DNP", "DEG", "VV", "NN", "PU"} <= labels
    assert not labels & {"S", "VBD", "VBZ", "IN", "NNP"}


def test_every_word_is_chinese_characters():
    import re

    assert all(re.fullmatch(f"[{HAN}]+", w) for w in synthetic_zh.words())
