"""``--dict-only`` and the run after it (issue 20, point 4), and what a failed run leaves behind.

Regression: ``--dict-only`` crashed after fairseq had written the dictionaries
(verify_token_counts looked for binaries), and left them behind so that the
same command then refused the --destdir.
"""

import os

import pytest

from mgsa_preprocess.cli import main


def command(raw, dest, *extra):
    return ["-s", "src", "-t", "tgt", "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--destdir",
            str(dest), "--trees-suffix", "tree", "--no-progress-bar", *extra]


@pytest.mark.parametrize("joined", [False, True])
def test_dict_only_then_binarize_equals_one_full_run(corpus, tmp_path, capsys, joined):
    raw, _ = corpus
    extra = ["--joined-dictionary"] if joined else []
    full = tmp_path / "full"
    main(command(raw, full, *extra))
    dest = tmp_path / "dest"
    main(command(raw, dest, "--dict-only", *extra))
    out = capsys.readouterr().out
    assert sorted(os.listdir(dest)) == ["dict.src.tags.txt", "dict.src.txt", "dict.tgt.txt", "preprocess.log"]
    for name in ("dict.src.tags.txt", "dict.src.txt", "dict.tgt.txt"):
        assert (dest / name).read_bytes() == (full / name).read_bytes(), name
    reuse = f"--srcdict {dest}/dict.src.txt" + ("" if joined else f" --tgtdict {dest}/dict.tgt.txt")
    reuse += f" --tagdict {dest}/dict.src.tags.txt"
    assert out.splitlines()[-1] == f"binarize with them: the same command without --dict-only, plus {reuse}"

    # the same command without --dict-only: refused, saying what to add
    with pytest.raises(SystemExit) as e:
        main(command(raw, dest, *extra))
    assert e.value.code == 1
    assert capsys.readouterr().err.strip() == (
        f"mgsa-preprocess: error: {dest}/dict.src.txt: already exists and would be rebuilt: to binarize with the "
        f"dictionaries already in {dest} (from --dict-only or an earlier run) add {reuse}; else use a fresh --destdir")
    main(command(raw, dest, *extra, *reuse.split()))
    names = sorted(n for n in os.listdir(full) if n.endswith((".bin", ".idx", ".txt")) and "report" not in n)
    assert names == sorted(n for n in os.listdir(dest) if n.endswith((".bin", ".idx", ".txt")) and "report" not in n)
    for name in names:
        assert (dest / name).read_bytes() == (full / name).read_bytes(), name


def test_dict_only_with_bpe_codes_leaves_no_segmented_text(corpus, tmp_path):
    from subword_nmt.learn_bpe import learn_bpe

    raw, _ = corpus
    codes = tmp_path / "codes"
    with open(raw / "train.src") as a, open(codes, "w") as out:
        learn_bpe(a.readlines(), out, 30)
    dest = tmp_path / "dest"
    main(command(raw, dest, "--dict-only", "--bpe-codes", str(codes)))
    assert sorted(os.listdir(dest)) == ["dict.src.tags.txt", "dict.src.txt", "dict.tgt.txt", "preprocess.log"]
    assert any("@@" in line for line in (dest / "dict.src.txt").read_text().splitlines())
    # then binarized with them (--srcdict/--tgtdict with --bpe-codes), as one full run would
    full = tmp_path / "full"
    main(command(raw, full, "--bpe-codes", str(codes)))
    main(command(raw, dest, "--bpe-codes", str(codes), "--srcdict", f"{dest}/dict.src.txt", "--tgtdict",
                 f"{dest}/dict.tgt.txt", "--tagdict", f"{dest}/dict.src.tags.txt"))
    for name in ("dict.src.txt", "dict.tgt.txt", "valid.src-tgt.src.bin", "valid.src-tgt.tgt.bin",
                 "valid.src-tgt.src.syn2.bin"):
        assert (dest / name).read_bytes() == (full / name).read_bytes(), name


def test_a_run_failing_after_the_dictionaries_removes_them(corpus, tmp_path, capsys, monkeypatch):
    """fairseq writes the dictionaries first: a later failure must not leave them to block the next run."""
    from fairseq_cli import preprocess as fairseq_preprocess

    raw, _ = corpus
    dest = tmp_path / "dest"

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fairseq_preprocess, "_make_all", disk_full)
    with pytest.raises(SystemExit):
        main(command(raw, dest))
    assert "fairseq-preprocess failed: OSError: [Errno 28] No space left on device" in capsys.readouterr().err
    assert not [n for n in os.listdir(dest) if n.startswith("dict.")]
    monkeypatch.undo()
    main(command(raw, dest))
    assert (dest / "valid.src-tgt.src.syn3.bin").exists()


def test_dict_only_needs_trainpref(corpus, tmp_path, capsys):
    raw, _ = corpus
    with pytest.raises(SystemExit):
        main(["-s", "src", "-t", "tgt", "--validpref", f"{raw}/valid", "--destdir", str(tmp_path / "d"),
              "--trees-suffix", "tree", "--dict-only", "--srcdict", "x", "--tgtdict", "y", "--tagdict", "z"])
    assert capsys.readouterr().err.strip() == ("mgsa-preprocess: error: --dict-only builds the dictionaries from "
                                               "--trainpref: give --trainpref")
