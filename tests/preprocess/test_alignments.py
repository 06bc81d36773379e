"""``--align-suffix`` / ``--alignfile`` through ``mgsa-preprocess`` (issue 20, point 2).

Regression: with ``--bpe-codes`` no alignment was binarized at all, and with a
list of valid/test prefixes the second and later splits were skipped, both
without a word. The subword alignment is checked here against a reference
expansion written in the test (piece -> word maps of the segmented text).
"""

import random

import pytest
from fairseq.data import data_utils

from mgsa_preprocess.cli import main


def write_alignments(raw, split, seed):
    """Random word alignments for a split of the corpus; returns them as lists of (i, j) per line."""
    rng = random.Random(seed)
    src = (raw / f"{split}.src").read_text().splitlines()
    tgt = (raw / f"{split}.tgt").read_text().splitlines()
    out = []
    for s, t in zip(src, tgt):
        ns, nt = len(s.split()), len(t.split())
        pairs = sorted({(rng.randrange(ns), rng.randrange(nt)) for _ in range(rng.randint(0, ns + 2))})
        out.append(pairs)
    (raw / f"{split}.align").write_text("".join(" ".join(f"{i}-{j}" for i, j in p) + "\n" for p in out))
    return out


def word_of_piece(segmented_line, separator="@@"):
    """The word index of every piece of a subword-nmt line."""
    out, word = [], 0
    for piece in segmented_line.split():
        out.append(word)
        if not piece.endswith(separator):
            word += 1
    return out


def read_alignments(prefix):
    ds = data_utils.load_indexed_dataset(prefix, None, "mmap")
    assert ds is not None, prefix
    return [sorted(zip(ds[k].tolist()[0::2], ds[k].tolist()[1::2])) for k in range(len(ds))]


def run(raw, dest, *extra):
    main(["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--destdir", str(dest), "--trees-suffix", "tree",
          "--no-progress-bar", "--align-suffix", "align", *extra])


@pytest.fixture
def codes(corpus, tmp_path):
    from subword_nmt.learn_bpe import learn_bpe

    raw, _ = corpus
    path = tmp_path / "codes"
    with open(raw / "train.src") as a, open(raw / "train.tgt") as b, open(path, "w") as out:
        learn_bpe(a.readlines() + b.readlines(), out, 40)
    return path


def test_alignments_are_mapped_to_subwords_with_bpe_codes(corpus, codes, tmp_path):
    raw, _ = corpus
    words = {split: write_alignments(raw, split, k) for k, split in enumerate(("train", "valid", "test"))}
    (raw / "test2.src").write_text((raw / "test.src").read_text())
    (raw / "test2.tgt").write_text((raw / "test.tgt").read_text())
    (raw / "test2.src.tree").write_text((raw / "test.src.tree").read_text())
    (raw / "test2.align").write_text((raw / "test.align").read_text())
    words["test1"] = words["test"]
    dest = tmp_path / "bin"
    run(raw, dest, "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test,{raw}/test2", "--bpe-codes", str(codes))
    split_words = 0
    for split, word_pairs in words.items():
        seg = "test" if split == "test1" else split
        src = (dest / "bpe" / f"{split}.src").read_text().splitlines()
        tgt = (dest / "bpe" / f"{split}.tgt").read_text().splitlines()
        got = read_alignments(str(dest / f"{split}.align.src-tgt"))
        assert len(got) == len(word_pairs) == len(src), seg
        for k, (pairs, s, t) in enumerate(zip(word_pairs, src, tgt)):
            ws, wt = word_of_piece(s), word_of_piece(t)
            want = sorted((p, q) for p in range(len(ws)) for q in range(len(wt)) if (ws[p], wt[q]) in set(pairs))
            assert got[k] == want, (split, k)
            split_words += len(want) > len(pairs)
    assert split_words, "no aligned word was split into pieces: weak test"


def test_alignments_without_bpe_are_the_users_and_every_listed_split_gets_one(corpus, tmp_path):
    raw, _ = corpus
    train = write_alignments(raw, "train", 5)
    test = write_alignments(raw, "test", 6)
    (raw / "test2.src").write_text((raw / "train.src").read_text())
    (raw / "test2.tgt").write_text((raw / "train.tgt").read_text())
    (raw / "test2.src.tree").write_text((raw / "train.src.tree").read_text())
    (raw / "test2.align").write_text((raw / "train.align").read_text())
    dest = tmp_path / "bin"
    run(raw, dest, "--testpref", f"{raw}/test,{raw}/test2", "--validpref", f"{raw}/valid")
    assert read_alignments(str(dest / "train.align.src-tgt")) == train
    assert read_alignments(str(dest / "test.align.src-tgt")) == test
    assert read_alignments(str(dest / "test1.align.src-tgt")) == train  # fairseq's own loop skips test1
    assert not (dest / "valid.align.src-tgt.bin").exists()  # valid has no file: said, not invented
    report = (dest / "mgsa_preprocess_report.txt").read_text()
    assert "alignments [valid]: no file, none written" in report


def test_alignfile_with_bpe_codes_is_mapped(corpus, codes, tmp_path):
    """--alignfile (fairseq's alignment dictionary) pairs subwords that the word alignment links."""
    raw, _ = corpus
    word_pairs = write_alignments(raw, "train", 9)
    dest = tmp_path / "bin"
    main(["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--destdir", str(dest), "--trees-suffix", "tree",
          "--no-progress-bar", "--alignfile", f"{raw}/train.align", "--bpe-codes", str(codes)])
    linked = set()  # (source piece, target piece) of every link of the reference expansion
    src = (dest / "bpe" / "train.src").read_text().splitlines()
    tgt = (dest / "bpe" / "train.tgt").read_text().splitlines()
    for pairs, s, t in zip(word_pairs, src, tgt):
        ws, wt, ps, pt = word_of_piece(s), word_of_piece(t), s.split(), t.split()
        linked |= {(ps[p], pt[q]) for p in range(len(ps)) for q in range(len(pt)) if (ws[p], wt[q]) in set(pairs)}
    entries = [tuple(line.split()) for line in (dest / "alignment.src-tgt.txt").read_text().splitlines()]
    assert len(entries) > 20 and set(entries) <= linked


@pytest.mark.parametrize("line, message", [
    ("0-0 0-99", "the pair 0-99 is out of range: {raw}/train.src:4 has {ns} words and {raw}/train.tgt:4 has {nt} "
                 "(indices start at 0)"),
    ("0-0 1:2", "expected alignment pairs i-j (source word i, target word j, from 0), got '1:2'"),
])
def test_bad_alignment_line_is_one_line_error_before_any_work(corpus, codes, tmp_path, capsys, line, message):
    raw, _ = corpus
    write_alignments(raw, "train", 1)
    lines = (raw / "train.align").read_text().splitlines()
    lines[3] = line
    (raw / "train.align").write_text("\n".join(lines) + "\n")
    ns = len((raw / "train.src").read_text().splitlines()[3].split())
    nt = len((raw / "train.tgt").read_text().splitlines()[3].split())
    dest = tmp_path / "bin"
    for extra in ([], ["--bpe-codes", str(codes)]):
        with pytest.raises(SystemExit) as e:
            run(raw, dest, *extra)
        assert e.value.code == 1
        err = capsys.readouterr().err.strip()
        assert err == f"mgsa-preprocess: error: {raw}/train.align:4: " + message.format(raw=raw, ns=ns, nt=nt)
        assert not (dest / "bpe").exists() and not (dest / "dict.src.txt").exists()


def test_alignment_file_with_a_line_too_few_or_no_file_at_all(corpus, tmp_path, capsys):
    raw, _ = corpus
    dest = tmp_path / "bin"
    with pytest.raises(SystemExit):
        run(raw, dest)
    assert capsys.readouterr().err.strip() == (f"mgsa-preprocess: error: --align-suffix align: no alignment file for "
                                               f"any split (looked for {raw}/train.align)")
    write_alignments(raw, "train", 2)
    lines = (raw / "train.align").read_text().splitlines()
    (raw / "train.align").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(SystemExit):
        run(raw, dest)
    assert capsys.readouterr().err.strip() == (
        f"mgsa-preprocess: error: {raw}/train.align: has {len(lines) - 1} lines but {raw}/train.src has more: every "
        "sentence pair needs a line (an empty one for no links)")
