"""Phrase files, the tag dictionary, and bad input: clear errors, nothing lost, --lenient counted."""

import os

import numpy as np
import pytest
from fairseq.data import Dictionary

from tests.preprocess.conftest import read_phrase_file, reference_levels
from mgsa_preprocess.binarize import (PhraseFileWriter, PhraseJob, TagTable, commit_split, remap_tags, write_split)
from mgsa_preprocess.errors import BadTree, PreprocessError
from mgsa_preprocess.report import SplitReport
from mgsa_preprocess.synthetic import generate

TREES = [
    "(ROOT (S (NP (NNP Bush)) (VP (VBD held) (NP (DT a) (NN talk)) (PP (IN with) (NP (NNP Sharon))))))",
    "( (S\n    (NP-SBJ (DT the) (NN dog) )\n    (VP (VBD ran)\n      (NP-TMP (-NONE- *T*-1) ))\n    (. .) ))",
    "(ROOT (NP (NN Yes)))",
]
SOURCE = ["Bu@@ sh held a tal@@ k wi@@ th Sharon", "the dog ran .", "Yes"]


def write(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return str(path)


def run_split(tmp_path, source, trees, name="train", tags=None, workers=1, lenient=False, levels=2, chunk_size=2000):
    job = PhraseJob(write(tmp_path / f"{name}.en", source), write(tmp_path / f"{name}.en.tree", trees),
                    levels=levels, lenient=lenient)
    report = SplitReport(name, levels, job.src_path, job.tree_path)
    tags = tags or TagTable()
    prefix = str(tmp_path / f"{name}.en-de.en")
    written = write_split(job, prefix, report, tags, workers=workers, progress=False, is_train=(name == "train"),
                          chunk_size=chunk_size)
    commit_split(written)
    return prefix, report, tags


def decoded(prefix, level, dictionary):
    return [(lens, [dictionary[t] for t in tags]) for lens, tags in read_phrase_file(prefix, level)]


def syn_files(d):
    return sorted(f for f in os.listdir(d) if ".syn" in f)


def test_phrase_files_exact_contents(tmp_path):
    prefix, report, tags = run_split(tmp_path, SOURCE, TREES)
    d = tags.dictionary
    assert decoded(prefix, 1, d) == [([2, 7], ["NNP", "VP"]), ([2, 1, 1], ["NP", "VBD", "."]), ([1], ["NN"])]
    assert decoded(prefix, 2, d) == [([2, 1, 3, 3], ["NNP", "VBD", "NP", "PP"]),
                                     ([1, 1, 1, 1], ["DT", "NN", "VBD", "."]), ([1], ["NN"])]
    # the dictionary: fairseq's specials, then tags by frequency (ties by name)
    assert d.symbols[:d.nspecial] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert d.symbols[d.nspecial:] == ["NN", "VBD", ".", "NNP", "NP", "DT", "PP", "VP"]
    assert d.count[d.nspecial:] == [3, 3, 2, 2, 2, 1, 1, 1]
    assert report.sentences == 3 and report.subwords == 9 + 4 + 1 and report.words == 11
    assert report.phrases == [6, 9]
    assert report.normalisation == {"none_removed": 1, "emptied_removed": 1, "function_tags_stripped": 2,
                                    "outer_removed": 2, "leaves_matched_through_escapes": 0}


def test_writer_round_trip_through_fairseq(tmp_path):
    items = [([3, 1, 2], [7, 4, 9]), ([], []), ([5], [4]), ([1] * 40, list(range(4, 44)))]
    w = PhraseFileWriter(str(tmp_path / "x.syn1"))
    for chunk in (items[:2], items[2:]):
        m = np.array([len(x) for x, _ in chunk], dtype=np.int64)
        w.add_chunk(m, np.array([v for x, _ in chunk for v in x], dtype=np.int32),
                    np.array([v for _, t in chunk for v in t], dtype=np.int32))
    sizes = w.finalize()
    remap_tags(w.partial, sizes, np.arange(100, dtype=np.int32) * 2)
    w.commit()
    assert read_phrase_file(str(tmp_path / "x"), 1) == [(lens, [2 * t for t in tags]) for lens, tags in items]


def test_workers_and_chunks_do_not_change_the_files(tmp_path):
    examples = generate(300, 11)
    source = [s for s, _, _ in examples]
    trees = [t for _, _, t in examples]
    outs = []
    for workers, chunk in ((1, 2000), (2, 7)):
        d = tmp_path / f"w{workers}"
        d.mkdir()
        prefix, _, _ = run_split(d, source, trees, workers=workers, chunk_size=chunk, levels=3)
        outs.append([open(f"{prefix}.syn{k}.{ext}", "rb").read() for k in (1, 2, 3) for ext in ("bin", "idx")])
    assert outs[0] == outs[1]


def test_unseen_tags_map_to_unk_and_are_counted(tmp_path):
    _, _, tags = run_split(tmp_path, SOURCE, TREES)
    prefix, report, _ = run_split(tmp_path, ["an old dog"], ["(ROOT (NP (DT an) (ADJP (JJ old)) (NN dog)))"],
                                  name="valid", tags=TagTable(tags.dictionary))
    assert decoded(prefix, 1, tags.dictionary) == [([1, 1, 1], ["DT", "<unk>", "NN"])]
    assert report.unseen_tags == {"JJ": 2}  # one phrase at each of the two levels


# ---- bad input ----------------------------------------------------------------------------------

def expect_error(tmp_path, source, trees, match, lenient=False):
    with pytest.raises(PreprocessError) as e:
        run_split(tmp_path, source, trees, lenient=lenient)
    assert syn_files(tmp_path) == []  # no phrase file, not even a partial one
    msg = str(e.value)
    assert match in msg, msg
    return e.value


def test_fewer_trees_than_lines(tmp_path):
    source = ["a b", "c d", "e f", "g h"]
    trees = ["(S (X a) (X b))", "(S (X e) (X f))", "(S (X g) (X h))"]  # the tree of line 2 is missing
    err = expect_error(tmp_path, source, trees, "has 3 trees but")
    # the first tree that stops matching its line is where to look
    assert (err.path, err.line) == (str(tmp_path / "train.en.tree"), 2)
    assert "train.en:2" in str(err) and "leaf 'e', word 'c'" in str(err)


def test_more_trees_than_lines_at_the_end(tmp_path):
    err = expect_error(tmp_path, ["a b"], ["(S (X a) (X b))", "(S\n (X c))"], "has 2 trees but")
    assert (err.path, err.line) == (str(tmp_path / "train.en.tree"), 2)
    err = expect_error(tmp_path, ["a b", "c"], ["(S (X a) (X b))"], "this line and the ones after it have no tree")
    assert (err.path, err.line) == (str(tmp_path / "train.en"), 2)


def test_leaves_differ(tmp_path):
    err = expect_error(tmp_path, SOURCE[:2] + ["No"], TREES, "leaves differ")
    # tree 3 starts on line 7: tree 2 spans lines 2-6
    assert isinstance(err, BadTree) and (err.path, err.line) == (str(tmp_path / "train.en.tree"), 7)
    assert "train.en:3" in str(err)


def test_unbalanced_bracket(tmp_path):
    err = expect_error(tmp_path, SOURCE, [TREES[0], "(S (NP (DT the) (NN dog)) (VP (VBD ran)) (. .)", TREES[2]],
                       "unbalanced bracket")
    assert (err.path, err.line) == (str(tmp_path / "train.en.tree"), 2)


def test_empty_line(tmp_path):
    err = expect_error(tmp_path, [SOURCE[0], "", SOURCE[2]], [TREES[0], "()", TREES[2]], "empty line")
    assert (err.path, err.line) == (str(tmp_path / "train.en"), 2)


def test_lenient_repairs_counted_and_nothing_lost(tmp_path):
    source = [SOURCE[0], "", "the cat ran .", "x y", SOURCE[2]]
    trees = [TREES[0], "()", TREES[1], "(S (NP x y))", TREES[2]]
    prefix, report, tags = run_split(tmp_path, source, trees, lenient=True)
    d = tags.dictionary
    level1 = decoded(prefix, 1, d)
    assert len(level1) == 5  # every line has its item, in order
    assert level1[0] == ([2, 7], ["NNP", "VP"])
    assert level1[1] == ([], [])  # empty line: no phrase (the dataset adds EOS)
    assert level1[2] == ([1, 1, 1, 1], ["<unk>"] * 4)  # leaves differ: flat
    assert level1[3] == ([1, 1], ["<unk>"] * 2)  # malformed: flat
    assert level1[4] == ([1], ["NN"])
    assert report.repaired == {"empty line": 1, "leaves differ from words": 1, "malformed tree": 1}
    assert len(report.repaired_examples) == 3 and "train.en.tree:3:" in report.repaired_examples[1]
    assert "<unk>" not in d.symbols[d.nspecial:]


def test_lenient_does_not_repair_structure(tmp_path):
    expect_error(tmp_path, ["a b", "c d"], ["(S (X a) (X b))"], "has 1 trees but", lenient=True)
    expect_error(tmp_path, ["a b"], ["(S (X a) (X b)"], "unbalanced bracket", lenient=True)


def test_tag_dictionary_file_round_trip(tmp_path):
    _, _, tags = run_split(tmp_path, SOURCE, TREES)
    path = str(tmp_path / "dict.en.tags.txt")
    tags.dictionary.save(path)
    loaded = Dictionary.load(path)
    assert loaded.symbols == tags.dictionary.symbols and loaded.count == tags.dictionary.count


def test_reference_agrees_on_synthetic_gold_trees(tmp_path):
    """Phrase files for generated data equal the reference partition of the generator's own trees."""
    from mgsa_preprocess.synthetic import Grammar

    g = Grammar(5)
    gold = [g.sentence() for _ in range(50)]
    prefix, _, tags = run_split(tmp_path, [" ".join(t.leaves()) for t in gold], [t.bracketed() for t in gold],
                                levels=3)
    for k in (1, 2, 3):
        got = decoded(prefix, k, tags.dictionary)
        want = [([e - s for s, e, _ in lv[k - 1]], [t for _, _, t in lv[k - 1]])
                for lv in (reference_levels(t, 3) for t in gold)]
        assert got == want


def test_split_without_any_phrase_is_an_error(tmp_path):
    # fairseq cannot read an indexed dataset with an empty data file: say so instead of writing one
    expect_error(tmp_path, ["", ""], ["()", "()"], "no phrase at all in this split", lenient=True)
