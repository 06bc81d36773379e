"""Parsing: shards and their merge, empty lines, and the stanza pipeline itself (when a model is available)."""

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.preprocess.conftest import read_phrase_file
from mgsa_preprocess import parse
from mgsa_preprocess.cli import main
from mgsa_preprocess.errors import PreprocessError


class LookupParser:
    """Stands in for stanza where a real model cannot show what is tested: the batches the
    parser was given (empty lines kept from it, escapes undone) and the merge's errors.
    The real pipeline, with a parser trained by the tests, is in test_stanza_trained.py.

    Returns, for each sentence, the gold tree of its first occurrence in the
    corpus, and records every batch it was given.
    """

    def __init__(self, examples):
        self.trees = {}
        for src, _, tree in examples:
            self.trees.setdefault(src, tree)
        self.batches = []

    def parse(self, sentences):
        self.batches.append(sentences)
        return [self.trees[" ".join(words)] for words in sentences]


@given(st.integers(0, 500), st.integers(1, 40))
def test_shard_ranges_cover_every_line_once(n, shards):
    ranges = [parse.shard_range(n, shards, i) for i in range(shards)]
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    sizes = [e - s for s, e in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_missing_or_stale_shards(corpus, tmp_path):
    raw, examples = corpus
    parser = LookupParser(examples["train"])
    src = str(raw / "train.src")
    parse.parse_shard(parser, src, str(tmp_path), "train", "src", 0, 3, progress=False)
    with pytest.raises(PreprocessError, match=r"2 of 3 parse shards of train are missing \(shard ids 1, 2\)"):
        parse.merge_shards(src, str(tmp_path), "train", "src", 3)
    for i in (1, 2):
        parse.parse_shard(parser, src, str(tmp_path), "train", "src", i, 3, progress=False)
    with open(src, "a") as f:  # the source changed after parsing
        f.write("Anna saw a dog .\n")
    with pytest.raises(PreprocessError, match="parse it again"):
        parse.merge_shards(src, str(tmp_path), "train", "src", 3)


def test_empty_lines_before_parsing(tmp_path):
    src = tmp_path / "s.src"
    src.write_text("Anna saw a dog .\n\nBoris met the cat .\n")
    parser = LookupParser([("Anna saw a dog .", "", "(ROOT (S (NNP Anna)))"),
                           ("Boris met the cat .", "", "(ROOT (S (NNP Boris)))")])
    with pytest.raises(PreprocessError) as e:
        parse.parse_lines(parser, str(src), str(tmp_path / "t"), progress=False)
    assert (e.value.path, e.value.line) == (str(src), 2) and parser.batches == []  # nothing parsed
    n = parse.parse_lines(parser, str(src), str(tmp_path / "t"), lenient=True, progress=False)
    assert n == 3 and (tmp_path / "t").read_text().splitlines() == ["(ROOT (S (NNP Anna)))", "()",
                                                                    "(ROOT (S (NNP Boris)))"]
    assert parser.batches == [[["Anna", "saw", "a", "dog", "."], ["Boris", "met", "the", "cat", "."]]]


def test_parser_sees_words_with_escapes_undone(tmp_path):
    src = tmp_path / "s.src"
    src.write_text("AT@@ &amp;@@ T sol@@ d 1\\/2 -LRB- a -RRB-\n")
    parser = LookupParser([("AT&T sold 1/2 ( a )", "", "(X (Y y))")])
    parse.parse_lines(parser, str(src), str(tmp_path / "t"), progress=False)
    assert parser.batches == [[["AT&T", "sold", "1/2", "(", "a", ")"]]]


# ---- stanza ------------------------------------------------------------------------------------

def stanza_english_or_skip():
    """The real pipeline, or a skip saying why (models are downloaded on first use, needing network)."""
    stanza = pytest.importorskip("stanza")
    try:
        return parse.StanzaParser("en", device="auto", download="none",
                                  model_dir=os.environ.get("STANZA_RESOURCES_DIR"))
    except PreprocessError as e:
        pytest.skip(f"no English stanza model available offline ({stanza.__version__}): {e}")


SENTENCES = ["Bush held a talk with Sharon .", "The committee &amp; the board met on Tuesday .",
             "Prices rose 5 % ( after a fall ) in March .", "Yes ."]


def test_stanza_pipeline_end_to_end(tmp_path):
    parser = stanza_english_or_skip()
    trees = parser.parse([s.replace("&amp;", "&").split() for s in SENTENCES])
    assert len(trees) == 4 and all(t.startswith("(ROOT") for t in trees)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.en").write_text("\n".join(SENTENCES) + "\n")
    (raw / "train.de").write_text("\n".join(f"satz {i}" for i in range(4)) + "\n")
    dest = tmp_path / "bin"
    main(["-s", "en", "-t", "de", "--trainpref", f"{raw}/train", "--destdir", str(dest), "--parser", "stanza",
          "--stanza-download", "none", "--no-progress-bar"]
         + (["--stanza-dir", os.environ["STANZA_RESOURCES_DIR"]] if os.environ.get("STANZA_RESOURCES_DIR") else []))
    assert len(open(parse.tree_path(str(dest), "train", "en")).read().splitlines()) == 4
    report = json.load(open(dest / "mgsa_preprocess_report.json"))
    assert report["splits"]["train"]["repaired"] == {}
    levels = [read_phrase_file(str(dest / "train.en-de.en"), k) for k in (1, 2, 3)]
    for i, s in enumerate(SENTENCES):
        bounds_above = set()
        for level in levels:
            lens, _ = level[i]
            assert sum(lens) == len(s.split())
            bounds = {sum(lens[:j + 1]) for j in range(len(lens))}
            assert bounds_above <= bounds
            bounds_above = bounds


def test_stanza_unavailable_is_a_one_line_error(corpus, tmp_path, capsys):
    try:
        parse.StanzaParser("en", download="none")
    except PreprocessError:
        pass
    else:
        pytest.skip("an English stanza model is installed here: the error path cannot be shown")
    raw, _ = corpus
    with pytest.raises(SystemExit) as e:
        main(["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--destdir", str(tmp_path / "b"),
              "--parser", "stanza", "--parser-lang", "en", "--stanza-download", "none", "--no-progress-bar"])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mgsa-preprocess: error: cannot load the stanza pipeline for language "
                                               "'en'")
