"""The generated treebank of the Penn Treebank's shape (preprocess/synthetic/ptb_shaped.py): the
figures docs/benchmarks-parser.md gives for its defaults, the files it writes, and its command."""

import subprocess
import sys

from mgsa_preprocess.synthetic import read_tree
from mgsa_preprocess.synthetic.ptb_shaped import write_treebank
from tests.paths import checkout_env


def test_the_defaults_give_the_figures_the_parser_page_cites(tmp_path):
    # docs/benchmarks-parser.md, "A generated treebank of the PTB's shape"
    summary = write_treebank(str(tmp_path))
    assert summary == {"train": {"trees": 3000, "mean_words": 24.4, "labels": 26},
                       "dev": {"trees": 400, "mean_words": 24.3, "labels": 26},
                       "test": {"trees": 400, "mean_words": 24.4, "labels": 26}}
    words = (tmp_path / "train.txt").read_text().split()
    assert len(set(words)) == 7184
    tags = {node.label for line in (tmp_path / "train.mrg").read_text().splitlines()
            for node in preterminals(read_tree(line))}
    assert len(tags) == 31


def preterminals(node):
    if node.is_preterminal:
        return [node]
    return [p for child in node.children for p in preterminals(child)]


def test_trees_and_words_agree_and_a_seed_repeats(tmp_path):
    sizes = (("train", 30), ("dev", 5), ("test", 5))
    write_treebank(str(tmp_path / "a"), sizes, seed=3)
    write_treebank(str(tmp_path / "b"), sizes, seed=3)
    for split, n in sizes:
        trees = (tmp_path / "a" / f"{split}.mrg").read_text().splitlines()
        lines = (tmp_path / "a" / f"{split}.txt").read_text().splitlines()
        assert len(trees) == len(lines) == n
        for tree, line in zip(trees, lines):
            leaves = read_tree(tree).leaves()
            assert leaves == line.split() and 20 <= len(leaves) <= 30
        for suffix in ("mrg", "txt"):
            assert (tmp_path / "a" / f"{split}.{suffix}").read_text() == (tmp_path / "b" / f"{split}.{suffix}").read_text()


def test_it_runs_as_a_module_of_the_package(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mgsa_preprocess.synthetic.ptb_shaped", "--out", str(tmp_path),
                           "--train", "3", "--dev", "2", "--test", "1"], env=checkout_env(), capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "'train': {'trees': 3," in proc.stdout
    assert len((tmp_path / "dev.mrg").read_text().splitlines()) == 2
