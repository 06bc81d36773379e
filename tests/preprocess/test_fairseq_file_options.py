"""fairseq-preprocess options that name files: refused in one line before any work, or carried out (issue 20, 2).

Regression: these combinations failed only after the phrase files and BPE were
done (fairseq's assertions), or (--workdir beside the data) overwrote the
user's own text with its segmentation.
"""

import os

import pytest

from mgsa_preprocess.cli import main


def refused(argv, capsys, dest):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not os.path.exists(dest) or not os.listdir(dest), "something was written before the refusal"
    return err.removeprefix("mgsa-preprocess: error: ")


def test_refusals_before_any_work(corpus, tmp_path, capsys):
    raw, _ = corpus
    dest = tmp_path / "dest"
    base = ["-s", "src", "-t", "tgt", "--destdir", str(dest), "--trees-suffix", "tree", "--no-progress-bar"]
    train = ["--trainpref", f"{raw}/train"]
    d = ["--srcdict", f"{raw}/train.src", "--tgtdict", f"{raw}/train.tgt"]  # existence is all that is checked first
    cases = [
        (train + ["--joined-dictionary"] + d,
         "--joined-dictionary uses one dictionary for both sides: give --srcdict or --tgtdict, not both"),
        (["--testpref", f"{raw}/test", "--tagdict", "t"],
         "without --trainpref there is no text to build the source dictionary from: pass --srcdict"),
        (["--testpref", f"{raw}/test", "--tagdict", "t", "--srcdict", "s"],
         "without --trainpref there is no text to build the target dictionary from: pass --tgtdict"),
        (["--testpref", f"{raw}/test", "--tagdict", "t", "--joined-dictionary"],
         "without --trainpref there is no text to build the joined dictionary from: pass --srcdict"),
        (["--testpref", f"{raw}/test", "--alignfile", "a"] + d,
         "--alignfile aligns the training text: it needs --trainpref"),
        (train + ["--only-source", "--align-suffix", "align"],
         "--align-suffix needs the target side: it cannot be used with --only-source"),
        (train + ["--only-source", "--tgtdict", "x"],
         "--tgtdict needs the target side: it cannot be used with --only-source"),
    ]
    for extra, message in cases:
        assert refused(base + extra, capsys, dest) == message, extra
    # fairseq would read {pref}.None
    assert refused(base[:2] + base[4:] + train, capsys, dest) == "--target-lang is required (or --only-source)"


def test_workdir_beside_the_data_is_refused_not_overwritten(corpus, tmp_path, capsys):
    from subword_nmt.learn_bpe import learn_bpe

    raw, _ = corpus
    codes = tmp_path / "codes"
    with open(raw / "train.src") as a, open(codes, "w") as out:
        learn_bpe(a.readlines(), out, 30)
    capsys.readouterr()  # learn_bpe's progress bar
    before = (raw / "train.src").read_text()
    dest = tmp_path / "dest"
    err = refused(["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--destdir", str(dest), "--trees-suffix",
                   "tree", "--no-progress-bar", "--bpe-codes", str(codes), "--workdir", str(raw)], capsys, dest)
    assert err == (f"{raw}/train.src: the segmented text would be written over this input file: give --workdir "
                   f"another folder (now {raw})")
    assert (raw / "train.src").read_text() == before
