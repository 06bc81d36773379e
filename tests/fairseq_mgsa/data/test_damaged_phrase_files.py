"""Damaged or mismatched phrase files: each is a one-line error naming the file, when the
task opens the files where that is possible, else at the first batch that touches the
sentence; never a traceback, never a silently wrong batch."""

import json
import shutil
import subprocess

import pytest
from fairseq import options, tasks

import fairseq_mgsa.data.phrase_pair_dataset as ppd
from fairseq_mgsa import MGSAError
from tests.fairseq_runs import TINY, USER_DIR, env, make_data_bin


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("damaged")
    good = make_data_bin(base / "a")
    # the same text, segmented with other BPE codes
    other = make_data_bin(base / "b", bpe_symbols=10)
    return good, other


def fresh(corpus, tmp_path):
    dest = tmp_path / "data-bin"
    shutil.copytree(corpus[0], dest)
    return dest


def load(data_bin, split="train"):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data_bin), "--user-dir", USER_DIR, "--task", "mgsa_translation", "--arch", "mgsa_transformer_syntactic",
        *TINY, "--max-tokens", "400", "--cpu"])
    task = tasks.setup_task(args)
    task.load_dataset(split)
    return task.dataset(split)


def error(data_bin, split="train"):
    with pytest.raises(MGSAError) as e:
        load(data_bin, split)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_intact_files_load_and_batch(corpus):
    ds = load(corpus[0])
    batch = ds.collater([ds[i] for i in range(8)])
    assert batch["net_input"]["src_phrase_lengths"].shape[:2] == (3, 8)


def test_truncated_bin(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    path = dest / "train.src-tgt.src.syn2.bin"
    data = path.read_bytes()
    path.write_bytes(data[:-12])
    msg = error(dest)
    assert msg.startswith(f"{path}: {len(data) - 12} bytes, but its index {dest}/train.src-tgt.src.syn2.idx "
                          f"describes {len(data)} (truncated)")


def test_truncated_idx(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    path = dest / "train.src-tgt.src.syn1.idx"
    data = path.read_bytes()
    path.write_bytes(data[:40])
    assert error(dest) == (f"{path}: 40 bytes, but an index of {len(corpus_sentences(corpus))} sentences has "
                           f"{len(data)}: the file is truncated; run mgsa-preprocess again")
    path.write_bytes(data[:20])
    assert error(dest) == f"{path}: 20 bytes, shorter than an index header: the file is truncated"


def test_empty_bin(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    path = dest / "train.src-tgt.src.syn1.bin"
    path.write_bytes(b"")
    assert error(dest).startswith(f"{path}: empty, but its index")


def corpus_sentences(corpus):
    return (corpus[0].parent / "raw" / "train.src").read_text().splitlines()


def test_idx_of_another_split(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    shutil.copyfile(dest / "valid.src-tgt.src.syn1.idx", dest / "train.src-tgt.src.syn1.idx")
    msg = error(dest)
    assert msg.startswith(f"{dest}/train.src-tgt.src.syn1.bin: ") and "the .idx belongs to another file" in msg


def test_token_idx_instead_of_a_phrase_idx(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    shutil.copyfile(dest / "train.src-tgt.src.idx", dest / "train.src-tgt.src.syn3.idx")
    msg = error(dest)
    assert msg.startswith(f"{dest}/train.src-tgt.src.syn3.idx: items of type ") and "phrase files hold int32" in msg


def test_phrase_files_from_another_bpe(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    for f in corpus[1].glob("*.syn*"):
        shutil.copyfile(f, dest / f.name)
    msg = error(dest)
    assert msg.startswith(f"{dest}/train.src-tgt.src.syn1, sentence 1: the phrases cover ")
    assert msg.endswith("phrase files must be made from the same (BPE) text")


def test_another_bpe_is_caught_at_the_first_batch_beyond_the_load_sample(corpus, tmp_path, monkeypatch):
    dest = fresh(corpus, tmp_path)
    for f in corpus[1].glob("*.syn*"):
        shutil.copyfile(f, dest / f.name)
    monkeypatch.setattr(ppd, "CHECKED_AT_LOAD", 0)  # as for a sentence the sample at load did not reach
    ds = load(dest)
    with pytest.raises(MGSAError) as e:
        ds.collater([ds[i] for i in (5, 6)])
    assert str(e.value).startswith(f"{dest}/train.src-tgt.src.syn1, sentence 6: the phrases cover ")


def test_tag_dictionary_in_another_order(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    path = dest / "dict.src.tags.txt"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[::-1]) + "\n")  # same tags, other ids: would train silently on wrong tags
    assert error(dest) == (f"{path}: not the tag dictionary the phrase files {dest}/train.src-tgt.src.syn* were "
                           f"written with (see mgsa_preprocess_report.json beside them): tag ids would mean other tags")


def test_smaller_tag_dictionary_without_a_report(corpus, tmp_path):
    """Data from before the report recorded the tags: the tag ids are checked against the dictionary."""
    dest = fresh(corpus, tmp_path)
    (dest / "mgsa_preprocess_report.json").unlink()
    path = dest / "dict.src.tags.txt"
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")
    msg = error(dest)
    assert msg.startswith(f"{dest}/train.src-tgt.src.syn") and f"but {path} has 6 entries" in msg


def test_report_records_the_tag_symbols(corpus):
    report = json.loads((corpus[0] / "mgsa_preprocess_report.json").read_text())
    assert report["tag_symbols"][:4] == ["<s>", "<pad>", "</s>", "<unk>"] and "NP" in report["tag_symbols"]


def test_fairseq_train_prints_one_line(corpus, tmp_path):
    dest = fresh(corpus, tmp_path)
    path = dest / "train.src-tgt.src.syn1.bin"
    path.write_bytes(path.read_bytes()[:-4])
    proc = subprocess.run(["fairseq-train", str(dest), "--user-dir", USER_DIR, "--task", "mgsa_translation",
                           "--arch", "mgsa_transformer_syntactic", *TINY, "--max-tokens", "400", "--cpu",
                           "--max-update", "1", "--save-dir", str(tmp_path / "ckpt")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert f"fairseq-mgsa error: {path}: " in proc.stderr and "(truncated)" in proc.stderr
    shutil.copyfile(corpus[0] / path.name, path)
    idx = dest / "valid.src-tgt.src.syn1.idx"
    idx.write_bytes(idx.read_bytes()[:30])
    proc = subprocess.run(["fairseq-train", str(dest), "--user-dir", USER_DIR, "--task", "mgsa_translation",
                           "--arch", "mgsa_transformer_syntactic", *TINY, "--max-tokens", "400", "--cpu",
                           "--max-update", "1", "--save-dir", str(tmp_path / "ckpt")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr[-2000:]
    assert f"fairseq-mgsa error: {idx}: 30 bytes, but an index of " in proc.stderr
