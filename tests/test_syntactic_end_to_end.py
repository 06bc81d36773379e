"""Syntactic MG-SA through the real commands:
mgsa-preprocess (gold trees, subword-nmt BPE) -> fairseq-train --task mgsa_translation
--arch mgsa_transformer_syntactic --criterion label_smoothed_cross_entropy_with_phrase_tags
-> resume -> fairseq-generate -> sacrebleu."""

import os
import re
import subprocess
import sys

import pytest
import sacrebleu
from subword_nmt.learn_bpe import learn_bpe

from preprocess.synthetic import write_corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
N_TEST = 24
TINY = ["--encoder-layers", "2", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]


def run(cmd, cwd, ok=True):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stderr[-4000:]}"
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("syntax")
    raw = tmp / "raw"
    write_corpus(str(raw), (("train", 240), ("valid", 20), ("test", N_TEST)), seed=5)
    with open(raw / "train.src") as src, open(raw / "train.tgt") as tgt, open(tmp / "codes", "w") as out:
        learn_bpe(list(src) + list(tgt), out, num_symbols=40)
    run([sys.executable, "-m", "preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", raw / "train", "--validpref", raw / "valid", "--testpref", raw / "test",
         "--trees-suffix", "tree", "--levels", "3", "--bpe-codes", tmp / "codes",
         "--destdir", tmp / "data-bin", "--joined-dictionary", "--workers", "1"], ROOT)
    return tmp / "data-bin"


def train(data_bin, save, max_update, extra=()):
    return run(["fairseq-train", data_bin, "--user-dir", USER_DIR, "--task", "mgsa_translation",
                "--arch", "mgsa_transformer_syntactic", *TINY, *extra,
                "--criterion", "label_smoothed_cross_entropy_with_phrase_tags", "--label-smoothing", "0.1",
                "--phrase-tag-weight", "0.5", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "800",
                "--max-update", str(max_update), "--save-dir", save, "--no-progress-bar", "--log-interval", "1",
                "--cpu", "--seed", "3"], data_bin.parent)


def test_train_resume_generate_score(data_bin, tmp_path):
    save = tmp_path / "ckpt"
    log = "".join(train(data_bin, save, 4)[1:])
    assert "model: MGSATransformerModel" in log
    assert re.search(r"train: 3 phrase levels from .*train\.src-tgt\.src\.syn\*", log)
    assert re.search(r"tag_loss [\d.]+ \| tag_accuracy [\d.]+", log), log[-3000:]

    log = "".join(train(data_bin, save, 6)[1:])
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 4 updates\)", log)
    assert int(re.findall(r"num_updates (\d+)", log)[-1]) == 6

    gen = run(["fairseq-generate", data_bin, "--user-dir", USER_DIR, "--task", "mgsa_translation",
               "--path", save / "checkpoint_last.pt", "--beam", "2", "--max-tokens", "2000",
               "--required-batch-size-multiple", "1", "--remove-bpe", "--cpu"], tmp_path)[1]
    hyps = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", gen, flags=re.M))
    refs = dict(re.findall(r"^T-(\d+)\t(.*)$", gen, flags=re.M))
    assert sorted(map(int, hyps)) == list(range(N_TEST))
    ids = sorted(refs, key=int)
    bleu = sacrebleu.corpus_bleu([hyps[i] for i in ids], [[refs[i] for i in ids]])
    assert 0.0 <= bleu.score <= 100.0
    with open(data_bin.parent / "raw" / "test.tgt") as f:  # references are the test set, in order
        assert [refs[i] for i in ids] == [line.strip() for line in f]


def test_syntactic_model_on_data_without_phrase_files_is_a_clear_error(tmp_path, data_bin):
    plain = tmp_path / "plain"
    run(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", data_bin.parent / "raw" / "train", "--validpref", data_bin.parent / "raw" / "valid",
         "--destdir", plain, "--joined-dictionary", "--workers", "1"], tmp_path)
    proc = run(["fairseq-train", plain, "--user-dir", USER_DIR, "--task", "mgsa_translation",
                "--arch", "mgsa_transformer_syntactic", *TINY, "--max-update", "1", "--max-tokens", "500", "--cpu",
                "--save-dir", tmp_path / "ck"], tmp_path, ok=False)
    rc, _, err = proc
    assert rc != 0 and "Traceback" not in err
    assert "fairseq-mgsa error: split 'valid' has 0 phrase levels" in err
