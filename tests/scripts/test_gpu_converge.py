"""scripts/gpu_converge.sh's checks and its `prepare`: bad input is refused before anything is
written, and `prepare` carries only what steps 06-08 read (the binaries and the test sets), never
the training text. The whole path (train, decode, score, pack; a run cut by the limit) runs on
the Multi30k recipe's own data in tests/end_to_end/test_recipe_multi30k.py (marker long)."""

import os
import subprocess

import pytest

from tests.paths import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "gpu_converge.sh")


def converge(*args, env=None):
    return subprocess.run(["bash", SCRIPT, *map(str, args)], capture_output=True, text=True,
                          env=env or os.environ.copy())


def fake_workdir(path):
    """A recipe WORKDIR after step 05 as far as the script looks: binaries, raw and tokenized text."""
    (path / "data-bin").mkdir(parents=True)
    for name in ("dict.en.txt", "dict.de.txt", "train.en-de.en.bin", "train.en-de.en.idx",
                 "test.en-de.en.bin", "test.en-de.en.idx"):
        (path / "data-bin" / name).write_text(f"{name}\n")
    for folder in ("raw", "tok"):
        (path / folder).mkdir()
        for split in ("train", "valid", "test"):
            for lang in ("en", "de"):
                (path / folder / f"{split}.{lang}").write_text(f"{folder} {split} {lang}\n")
    return path


def test_prepare_copies_the_binaries_and_the_test_sets_only(tmp_path):
    work, dest = fake_workdir(tmp_path / "work"), tmp_path / "lease"
    proc = converge("prepare", "multi30k_en_de", work, dest)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(dest / "data-bin")) == sorted(os.listdir(work / "data-bin"))
    assert sorted(os.listdir(dest / "raw")) == sorted(os.listdir(dest / "tok")) == ["test.de", "test.en"]
    assert (dest / "raw" / "test.de").read_text() == "raw test de\n"
    # an existing DEST is not written into
    again = converge("prepare", "multi30k_en_de", work, dest)
    assert again.returncode == 2 and f"{dest} exists" in again.stderr


@pytest.mark.parametrize("missing, said", [
    ("data-bin", "data-bin: no such directory"),
    ("data-bin/test.en-de.en.idx", "has no test split"),
    ("raw", "raw/test.*: missing"),
    ("tok", "tok/test.*: missing"),
])
def test_run_refuses_an_incomplete_prepared_directory_before_writing(tmp_path, missing, said):
    prepared = fake_workdir(tmp_path / "prepared")
    target = prepared / missing
    if target.is_dir():
        for f in target.iterdir():
            f.unlink()
        target.rmdir()
    else:
        target.unlink()
    out = tmp_path / "out"
    proc = converge("run", "multi30k_en_de", prepared, out)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("args, said", [
    (["run", "wmt14_en_de", "P", "O"], "RECIPE 'wmt14_en_de': expected multi30k_en_de or tatoeba_zh_en"),
    (["run", "multi30k_en_de", "P", "O", "--runs", "transformer-1"], "'transformer-1' is not SYSTEM:SEED"),
    (["run", "multi30k_en_de", "P", "O", "--jobs", "0"], "--jobs '0'"),
    (["run", "multi30k_en_de", "P", "O", "--limit", "9m"], "--limit '9m': expected seconds"),
    (["run", "multi30k_en_de", "P", "O", "--fp16"], "unknown option '--fp16'"),
])
def test_run_refuses_bad_options(tmp_path, args, said):
    prepared = fake_workdir(tmp_path / "prepared")
    args = [str(prepared) if a == "P" else str(tmp_path / "out") if a == "O" else a for a in args]
    proc = converge(*args)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_run_refuses_an_out_directory_with_an_earlier_summary(tmp_path):
    prepared = fake_workdir(tmp_path / "prepared")
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.txt").write_text("an earlier lease's runs\n")
    bin_dir = tmp_path / "bin"   # stand-ins so that the PATH check passes: nothing may run them
    bin_dir.mkdir()
    for tool in ("fairseq-train", "fairseq-generate", "sacrebleu", "sacremoses"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 99\n")
        (bin_dir / tool).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    proc = converge("run", "multi30k_en_de", prepared, out, env=env)
    assert proc.returncode == 2 and "earlier run's summary.txt" in proc.stderr
    assert (out / "summary.txt").read_text() == "an earlier lease's runs\n"
