"""``mgsa-preprocess`` end to end on generated data, read back through fairseq's indexed datasets."""

import json
import os
import random
import subprocess
import sys

import pytest
from fairseq.data import Dictionary, data_utils

from tests.paths import ROOT
from tests.preprocess.conftest import read_phrase_file, reference_levels
from mgsa_preprocess.align import SPM_SPACE
from mgsa_preprocess.cli import main
from mgsa_preprocess.synthetic import Grammar, generate

SIZES = (("train", 120), ("valid", 20), ("test", 20))
SEED = 3


def gold_trees():
    """The generator's own trees for the ``corpus`` fixture (write_corpus seeds split i with seed*1000+i)."""
    out = {}
    for i, (split, n) in enumerate(SIZES):
        g = Grammar(SEED * 1000 + i)
        out[split] = [g.sentence() for _ in range(n)]
        assert [t.bracketed() for t in out[split]] == [x[2] for x in generate(n, SEED * 1000 + i)]
    return out


def cli(raw, dest, *extra):
    main(["--source-lang", "src", "--target-lang", "tgt", "--trainpref", f"{raw}/train", "--validpref",
          f"{raw}/valid", "--testpref", f"{raw}/test", "--destdir", str(dest), "--no-progress-bar", *extra])


def check_against_gold(dest, pieces_per_word, levels=3):
    """Tokens and phrase files of every split against the gold trees; pieces_per_word[split][i] per word."""
    src_dict = Dictionary.load(os.path.join(dest, "dict.src.txt"))
    tag_dict = Dictionary.load(os.path.join(dest, "dict.src.tags.txt"))
    gold = gold_trees()
    for split, trees in gold.items():
        prefix = os.path.join(dest, f"{split}.src-tgt.src")
        tokens = data_utils.load_indexed_dataset(prefix, src_dict, "mmap")
        assert len(tokens) == len(trees)
        for k in range(1, levels + 1):
            items = read_phrase_file(prefix, k)
            assert len(items) == len(trees)
            for i, (tree, (lens, tags)) in enumerate(zip(trees, items)):
                want = reference_levels(tree, levels)[k - 1]
                pieces = pieces_per_word[split][i]
                assert lens == [sum(pieces[s:e]) for s, e, _ in want], (split, i, k)
                assert [tag_dict[t] for t in tags] == [t for _, _, t in want]
                # the contract with the dataset: the phrases cover the tokens minus EOS
                assert sum(lens) == len(tokens[i]) - 1 and tokens[i][-1] == src_dict.eos()


def test_end_to_end_tree_files(corpus, tmp_path):
    raw, examples = corpus
    dest = tmp_path / "bin"
    cli(raw, dest, "--trees-suffix", "tree", "--workers", "2")
    pieces = {s: [[1] * len(src.split()) for src, _, _ in ex] for s, ex in examples.items()}
    check_against_gold(dest, pieces)
    src_dict = Dictionary.load(str(dest / "dict.src.txt"))
    tokens = data_utils.load_indexed_dataset(str(dest / "valid.src-tgt.src"), src_dict, "mmap")
    assert [src_dict.string(tokens[i][:-1]) for i in range(len(tokens))] == [s for s, _, _ in examples["valid"]]
    report = json.loads((dest / "mgsa_preprocess_report.json").read_text())
    train = report["splits"]["train"]
    assert train["sentences"] == 120 and train["repaired"] == {}
    assert [lv["phrases"] for lv in train["levels"]] == [
        sum(len(reference_levels(t, 3)[k]) for t in gold_trees()["train"]) for k in range(3)]
    assert train["levels"][0]["mean_phrase_words"] == round(train["words"] / train["levels"][0]["phrases"], 4)
    assert sum(train["tag_counts"].values()) == sum(lv["phrases"] for lv in train["levels"])
    assert "REPAIRED" not in (dest / "mgsa_preprocess_report.txt").read_text()


def test_end_to_end_with_bpe_codes(corpus, tmp_path):
    from subword_nmt.learn_bpe import learn_bpe

    raw, examples = corpus
    codes = tmp_path / "codes"
    with open(raw / "train.src") as a, open(raw / "train.tgt") as b, open(codes, "w") as out:
        learn_bpe(a.readlines() + b.readlines(), out, 40)
    dest = tmp_path / "bin"
    cli(raw, dest, "--trees-suffix", "tree", "--bpe-codes", str(codes))
    pieces = {}
    for split, ex in examples.items():
        segmented = (dest / "bpe" / f"{split}.src").read_text().splitlines()
        assert [s.replace("@@ ", "") for s in segmented] == [src for src, _, _ in ex]
        # pieces per word, counted here from the segmented text
        pieces[split] = [[p.count("@@\x00") + 1 for p in (s + " ").replace("@@ ", "@@\x00").split(" ") if p]
                         for s in segmented]
    assert any(n > 1 for words in pieces["train"] for n in words), "the codes split no word: weak test"
    check_against_gold(dest, pieces)


def test_end_to_end_sentencepiece_input(corpus, tmp_path):
    raw, examples = corpus
    seg = tmp_path / "spm"
    seg.mkdir()
    rng = random.Random(0)
    pieces = {}
    for split, ex in examples.items():
        lines, pieces[split] = [], []
        for src, tgt, tree in ex:
            out, counts = [], []
            for w in src.split():
                n = rng.randint(1, min(3, len(w)))
                cut = sorted(rng.sample(range(1, len(w)), n - 1)) if n > 1 else []
                parts = [w[a:b] for a, b in zip([0] + cut, cut + [len(w)])]
                out += [SPM_SPACE + parts[0]] + parts[1:]
                counts.append(n)
            lines.append(" ".join(out))
            pieces[split].append(counts)
        (seg / f"{split}.src").write_text("\n".join(lines) + "\n")
        (seg / f"{split}.tgt").write_text((raw / f"{split}.tgt").read_text())
        (seg / f"{split}.src.tree").write_text((raw / f"{split}.src.tree").read_text())
    dest = tmp_path / "bin"
    cli(seg, dest, "--trees-suffix", "tree", "--subword-style", "sentencepiece")
    check_against_gold(dest, pieces)


def run_console(*args):
    return subprocess.run([sys.executable, "-m", "mgsa_preprocess.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_bad_tree_is_one_line_error_and_nothing_written(corpus, tmp_path):
    raw, _ = corpus
    trees = (raw / "valid.src.tree").read_text().splitlines()
    trees[6] = trees[6].replace("(. .)", "(. !)")  # leaf differs from the sentence's "."
    (raw / "valid.src.tree").write_text("\n".join(trees) + "\n")
    dest = tmp_path / "bin"
    r = run_console("-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid",
                    "--destdir", str(dest), "--trees-suffix", "tree", "--no-progress-bar")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mgsa-preprocess: error: {raw}/valid.src.tree:7: the tree's leaves differ from the "
                           f"words of {raw}/valid.src:7 at word "), last
    assert not [f for f in os.listdir(dest) if f.endswith((".bin", ".idx"))]


def test_missing_file_and_existing_dictionary(corpus, tmp_path, capsys):
    raw, _ = corpus
    with pytest.raises(SystemExit) as e:
        main(["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/nope", "--destdir", str(tmp_path / "b"),
              "--trees-suffix", "tree"])
    assert e.value.code == 1
    assert capsys.readouterr().err.strip() == f"mgsa-preprocess: error: {raw}/nope.src: source text not found"
    dest = tmp_path / "bin"
    dest.mkdir()
    (dest / "dict.src.txt").write_text("a 1\n")
    with pytest.raises(SystemExit):
        main(["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--destdir", str(dest), "--trees-suffix", "tree"])
    assert "dict.src.txt: already exists" in capsys.readouterr().err


def test_option_errors(corpus, tmp_path, capsys):
    raw, _ = corpus
    base = ["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--destdir", str(tmp_path / "b")]
    for extra, msg in ((["--trees-suffix", "tree", "--levels", "0"], "--levels must be at least 1"),
                       ([], "give the source's trees"),
                       (["--trees-suffix", "tree", "--shard-id", "0", "--num-shards", "2"], "need --parser"),
                       (["--parser", "stanza", "--shard-id", "2", "--num-shards", "2"], "--shard-id must be in")):
        with pytest.raises(SystemExit):
            main(base + extra)
        assert msg in capsys.readouterr().err


def test_bad_bpe_codes(corpus, tmp_path, capsys):
    raw, _ = corpus
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\nthree parts here\n")
    with pytest.raises(SystemExit) as e:
        cli(raw, tmp_path / "bin", "--trees-suffix", "tree", "--bpe-codes", str(codes))
    assert e.value.code == 1
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"mgsa-preprocess: error: {codes}: cannot read BPE codes")


def test_tagdict_reuse_without_train(corpus, tmp_path):
    raw, _ = corpus
    first = tmp_path / "first"
    cli(raw, first, "--trees-suffix", "tree", "--levels", "2")
    second = tmp_path / "second"
    main(["-s", "src", "-t", "tgt", "--testpref", f"{raw}/test", "--destdir", str(second), "--trees-suffix", "tree",
          "--levels", "2", "--no-progress-bar", "--srcdict", str(first / "dict.src.txt"), "--tgtdict",
          str(first / "dict.tgt.txt"), "--tagdict", str(first / "dict.src.tags.txt")])
    assert (second / "dict.src.tags.txt").read_text() == (first / "dict.src.tags.txt").read_text()
    for k in (1, 2):
        for ext in ("bin", "idx"):
            name = f"test.src-tgt.src.syn{k}.{ext}"
            assert (second / name).read_bytes() == (first / name).read_bytes()


def test_ptb_tree_file_with_escapes_and_bpe_codes(tmp_path):
    """Multi-line PTB trees (traces, function tags, escapes) against Moses-escaped text, BPE applied by the command."""
    from tests.preprocess.test_trees import ESCAPES_SOURCE, PTB_CONTROL, PTB_ESCAPES

    raw = tmp_path / "raw"
    raw.mkdir()
    source = ["Maria Lopez declined to comment on the deal .", ESCAPES_SOURCE]
    (raw / "train.en").write_text("\n".join(source) + "\n")
    (raw / "train.de").write_text("eins\nzwei\n")
    (raw / "train.en.mrg").write_text(PTB_CONTROL + "\n" + PTB_ESCAPES)
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\nQ Z\n")  # a merge that never applies: every word is split into characters
    dest = tmp_path / "bin"
    main(["-s", "en", "-t", "de", "--trainpref", f"{raw}/train", "--destdir", str(dest), "--trees-suffix", "mrg",
          "--bpe-codes", str(codes), "--levels", "2", "--no-progress-bar"])
    seg = (dest / "bpe" / "train.en").read_text().splitlines()
    assert seg[1].startswith("&@@ q@@ u@@ o@@ t@@ ; H@@ a@@ r")
    chars = [[len(w) for w in line.split()] for line in source]
    word_spans = [  # from test_trees: the same trees, partitioned
        [[(0, 2, "NP"), (2, 8, "VP"), (8, 9, ".")],
         [(0, 1, "NNP"), (1, 2, "NNP"), (2, 3, "VBD"), (3, 8, "S"), (8, 9, ".")]],
        [[(0, 1, "``"), (1, 5, "NP"), (5, 9, "VP"), (9, 10, "''"), (10, 11, ".")],
         [(0, 1, "``"), (1, 2, "NNP"), (2, 3, "-LRB-"), (3, 4, "NNP"), (4, 5, "-RRB-"), (5, 6, "VBD"),
          (6, 9, "NP"), (9, 10, "''"), (10, 11, ".")]],
    ]
    tag_dict = Dictionary.load(str(dest / "dict.en.tags.txt"))
    for k in (1, 2):
        items = read_phrase_file(str(dest / "train.en-de.en"), k)
        assert items == [([sum(chars[i][s:e]) for s, e, _ in word_spans[i][k - 1]],
                          [tag_dict.index(t) for _, _, t in word_spans[i][k - 1]]) for i in range(2)]
    report = json.loads((dest / "mgsa_preprocess_report.json").read_text())["splits"]["train"]
    assert report["normalisation"] == {"emptied_removed": 2, "function_tags_stripped": 6,
                                       "leaves_matched_through_escapes": 6, "none_removed": 2, "outer_removed": 2}
