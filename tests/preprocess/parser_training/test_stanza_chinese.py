"""The stanza path for a Chinese source, offline: a tiny parser trained here with mgsa-train-parser
--lang zh on Chinese trees (CTB labels, segmented words), then mgsa-preprocess -s zh --parser stanza
on segmented Chinese text; and stanza's own Chinese model asked for where it cannot be downloaded."""

import re
import subprocess
import sys

import pytest
from fairseq.data import Dictionary

from mgsa_preprocess.cli import main
from tests.paths import command
from tests.preprocess.conftest import TINY_PARSER, read_phrase_file, reference_levels
from tests.preprocess.parser_training.test_stanza_trained import as_node, offline_env
from tests.preprocess.zh_trees import corpus

SPLITS = ("train", "valid")


@pytest.fixture(scope="module")
def zh_parser(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stanza_zh")
    corpus(str(tmp / "raw"), (("train", 40), ("valid", 10)), seed=7)
    proc = subprocess.run([str(c) for c in command(
        "mgsa-train-parser", "--lang", "zh", "--train", tmp / "raw" / "train.zh.tree", "--dev",
        tmp / "raw" / "valid.zh.tree", "--out", tmp / "parser", *TINY_PARSER)],
        capture_output=True, text=True, env=offline_env(tmp), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp, tmp / "parser"


def test_chinese_words_are_parsed_offline_into_the_phrase_files(zh_parser):
    from stanza.models.constituency import tree_reader

    from mgsa_preprocess.parse import tree_path
    from mgsa_preprocess.stanza_model import read_record

    tmp, parser_dir = zh_parser
    assert read_record(str(parser_dir))["lang"] == "zh"
    raw, dest = tmp / "raw", tmp / "bin"
    main(["-s", "zh", "-t", "en", "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--parser", "stanza",
          "--stanza-dir", str(parser_dir), "--subword-style", "none", "--destdir", str(dest), "--workers", "1",
          "--no-progress-bar"])
    tag_dict = Dictionary.load(str(dest / "dict.zh.tags.txt"))
    for split in SPLITS:
        words = [line.split() for line in (raw / f"{split}.zh").read_text(encoding="utf-8").splitlines()]
        trees = tree_reader.read_tree_file(tree_path(str(dest), split, "zh"))
        assert len(trees) == len(words)
        # the parser's leaves are the segmenter's words, Chinese characters and full-width marks as given
        assert [t.leaf_labels() for t in trees] == words
        prefix = str(dest / f"{split}.zh-en.zh")
        for k in (1, 2, 3):
            for tree, (lens, tags) in zip(trees, read_phrase_file(prefix, k)):
                want = reference_levels(as_node(tree), 3)[k - 1]
                assert lens == [e - s for s, e, _ in want]
                assert list(tags) == [tag_dict.index(t) for _, _, t in want]
    # the tiny parser (one epoch) predicts little, but only the Chinese treebank's labels
    trained_labels = {label for line in (raw / "train.zh.tree").read_text(encoding="utf-8").splitlines()
                      for label in re.findall(r"\((\S+) ", line)}
    assert set(tag_dict.symbols[tag_dict.nspecial:]) <= trained_labels


def test_stanza_chinese_model_that_cannot_be_downloaded_is_a_one_line_error(tmp_path):
    (tmp_path / "train.zh").write_text("我们 喜欢 书 。\n", encoding="utf-8")
    (tmp_path / "train.en").write_text("we like books .\n", encoding="utf-8")
    proc = subprocess.run([str(c) for c in command(
        "mgsa-preprocess", "-s", "zh", "-t", "en", "--trainpref", tmp_path / "train", "--parser", "stanza",
        "--stanza-download", "none", "--stanza-dir", tmp_path / "no-models", "--destdir", tmp_path / "bin",
        "--no-progress-bar")], capture_output=True, text=True, env=offline_env(tmp_path), timeout=300)
    assert proc.returncode == 1
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mgsa-preprocess: error: cannot load the stanza pipeline for language "
                                               "'zh' (tokenize,pos,constituency)"), proc.stderr
    assert not (tmp_path / "bin" / "dict.zh.txt").exists()
