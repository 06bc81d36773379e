"""Shared helpers for the preprocessing tests.

``reference_levels`` is a second, recursive statement of the partition rule,
written independently of ``mgsa_preprocess.partition`` (which is iterative and works
on the normalised tuples): the tests hold the implementation against it.
"""


import pytest

from mgsa_preprocess.synthetic import Node

ROOT_LABELS = ("", "ROOT", "TOP")


def without_empty_elements(node: Node):
    """The tree without -NONE- pre-terminals and the constituents they leave empty (None if nothing is left)."""
    if node.is_preterminal:
        return None if node.label == "-NONE-" else node
    kids = [c for c in (without_empty_elements(c) for c in node.children) if c is not None]
    return Node(node.label, kids) if kids else None


def n_words(node: Node) -> int:
    return 1 if node.is_preterminal else sum(n_words(c) for c in node.children)


def pos_of_single_word(node: Node) -> str:
    while not node.is_preterminal:
        (node,) = node.children
    return node.label


def reference_levels(tree: Node, levels: int):
    """Levels as lists of (start word, end word, tag), by the definition in docs/preprocessing.md (The partition).

    ``tree`` carries plain labels (no function tags) and may contain -NONE-.
    """
    top = without_empty_elements(tree)
    if top is None:
        return [[] for _ in range(levels)]
    while top.label in ROOT_LABELS and not top.is_preterminal and len(top.children) == 1:
        top = top.children[0]
    if n_words(top) == 1:
        return [[(0, 1, pos_of_single_word(top))] for _ in range(levels)]

    def phrases(node, start, depth):
        """The phrases ``depth`` levels below ``node``'s own level."""
        width = n_words(node)
        if width == 1:
            return [(start, start + 1, pos_of_single_word(node))]
        if depth == 0:
            return [(start, start + width, node.label)]
        out = []
        for c in node.children:
            out += phrases(c, start, depth - 1)
            start += n_words(c)
        return out

    out = []
    for k in range(levels):
        level, start = [], 0
        for c in top.children:
            level += phrases(c, start, k)
            start += n_words(c)
        out.append(level)
    return out


def subword_spans(level, pieces_per_word):
    """Word spans -> subword lengths, by summing the pieces of each word."""
    return [sum(pieces_per_word[s:e]) for s, e, _ in level]


def read_phrase_file(prefix: str, level: int):
    """Items of ``{prefix}.syn{level}`` through fairseq's own loader, as (lens, tags) lists."""
    from fairseq.data import data_utils

    ds = data_utils.load_indexed_dataset(f"{prefix}.syn{level}", None, "mmap")
    assert ds is not None, f"{prefix}.syn{level} not readable by fairseq"
    out = []
    for i in range(len(ds)):
        item = ds[i].tolist()
        m = len(item) // 2
        assert len(item) == 2 * m
        out.append((item[:m], item[m:]))
    return out


@pytest.fixture
def corpus(tmp_path):
    """A small synthetic corpus (word level, one-line gold trees): (dir, {split: examples})."""
    from mgsa_preprocess.synthetic import generate, write_corpus

    sizes = (("train", 120), ("valid", 20), ("test", 20))
    d = tmp_path / "raw"
    write_corpus(str(d), sizes, seed=3)
    examples = {split: generate(n, 3 * 1000 + i) for i, (split, n) in enumerate(sizes)}
    return d, examples


@pytest.fixture(scope="session")
def tiny_parser(tmp_path_factory):
    """(parser directory that mgsa-train-parser wrote, the grammar's treebank it learned): a real run
    of this checkout's command, tiny (seconds), in a subprocess."""
    import subprocess

    from mgsa_preprocess.synthetic import write_corpus
    from tests.paths import checkout_env, command

    tmp = tmp_path_factory.mktemp("tiny_parser")
    write_corpus(str(tmp / "treebank"), (("train", 40), ("valid", 10), ("test", 10)), seed=3)
    proc = subprocess.run(command("mgsa-train-parser", "--train", tmp / "treebank" / "train.src.tree", "--dev",
                                  tmp / "treebank" / "valid.src.tree", "--out", tmp / "parser", *TINY_PARSER),
                          capture_output=True, text=True, env=checkout_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp / "parser", tmp / "treebank"


TINY_PARSER = ["--parser-epochs", "1", "--tagger-steps", "4", "--hidden-size", "16", "--wordvec-dim", "8", "--quiet"]
