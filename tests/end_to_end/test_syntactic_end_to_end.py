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

from mgsa_preprocess.synthetic import write_corpus

from tests.paths import ROOT
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
    run([sys.executable, "-m", "mgsa_preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
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


@pytest.fixture(scope="module")
def checkpoint(data_bin):
    save = data_bin.parent / "ckpt"
    log = "".join(train(data_bin, save, 4)[1:])
    assert "model: MGSATransformerModel" in log
    assert re.search(r"train: 3 phrase levels from .*train\.src-tgt\.src\.syn\*", log)
    assert re.search(r"tag_loss [\d.]+ \| tag_accuracy [\d.]+", log), log[-3000:]

    log = "".join(train(data_bin, save, 6)[1:])
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 4 updates\)", log)
    assert int(re.findall(r"num_updates (\d+)", log)[-1]) == 6
    return save / "checkpoint_last.pt"


def generate(data_bin, checkpoint, cwd):
    out = run(["fairseq-generate", data_bin, "--user-dir", USER_DIR, "--task", "mgsa_translation",
               "--path", checkpoint, "--beam", "2", "--batch-size", "1", "--required-batch-size-multiple", "1",
               "--remove-bpe", "--cpu"], cwd)[1]
    hyps = {int(i): h for i, h in re.findall(r"^H-(\d+)\t\S+\t(.*)$", out, flags=re.M)}
    refs = {int(i): r for i, r in re.findall(r"^T-(\d+)\t(.*)$", out, flags=re.M)}
    return hyps, refs


def test_train_resume_generate_score(data_bin, checkpoint, tmp_path):
    hyps, refs = generate(data_bin, checkpoint, tmp_path)
    assert sorted(hyps) == list(range(N_TEST))
    ids = sorted(refs)
    bleu = sacrebleu.corpus_bleu([hyps[i] for i in ids], [[refs[i] for i in ids]])
    assert 0.0 <= bleu.score <= 100.0
    with open(data_bin.parent / "raw" / "test.tgt") as f:  # references are the test set, in order
        assert [refs[i] for i in ids] == [line.strip() for line in f]


def test_interactive_with_preparsed_input_matches_generate(data_bin, checkpoint, tmp_path):
    """Trees given to fairseq-interactive (BPE applied by fairseq) give the translations
    fairseq-generate gives from mgsa-preprocess's phrase files."""
    with open(data_bin.parent / "raw" / "test.src.tree") as f:
        trees = f.read()
    proc = subprocess.run(["fairseq-interactive", data_bin, "--user-dir", USER_DIR, "--task", "mgsa_translation",
                           "--source-input", "trees", "--bpe", "subword_nmt",
                           "--bpe-codes", data_bin.parent / "codes", "--path", checkpoint, "--beam", "2",
                           "--cpu"], cwd=tmp_path, input=trees, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # D-: the hypothesis after fairseq-interactive undoes the BPE (generate: --remove-bpe)
    interactive = {int(i): h for i, h in re.findall(r"^D-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M)}
    hyps, _ = generate(data_bin, checkpoint, tmp_path)
    assert interactive == hyps


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


@pytest.fixture(scope="module")
def annotator_parts(data_bin):
    from argparse import Namespace

    from fairseq.data import Dictionary
    from fairseq.data.encoders.subword_nmt_bpe import SubwordNMTBPE

    src_dict = Dictionary.load(str(data_bin / "dict.src.txt"))
    tag_dict = Dictionary.load(str(data_bin / "dict.src.tags.txt"))
    bpe = SubwordNMTBPE(Namespace(bpe_codes=str(data_bin.parent / "codes"), bpe_separator="@@"))
    with open(data_bin.parent / "raw" / "test.src.tree") as f:
        trees = [line.strip() for line in f]
    with open(data_bin.parent / "raw" / "test.src") as f:
        lines = [line.strip() for line in f]
    return src_dict, tag_dict, bpe, lines, trees


def preprocessed(data_bin, levels=3):
    """The test split as mgsa-preprocess wrote it: token ids and phrase files, read by fairseq."""
    from fairseq.data import data_utils

    tokens = data_utils.load_indexed_dataset(str(data_bin / "test.src-tgt.src"), None)
    phrase_files = [data_utils.load_indexed_dataset(str(data_bin / f"test.src-tgt.src.syn{k}"), None)
                    for k in range(1, levels + 1)]
    return tokens, phrase_files


def test_interactive_phrases_equal_mgsa_preprocess_phrase_files(data_bin, annotator_parts):
    """Pre-parsed trees give exactly the tokens and phrase files of mgsa-preprocess. (Text
    input, parsed by a real stanza parser trained in the tests, is checked the same way in
    tests/preprocess/test_stanza_trained.py.)"""
    from fairseq_mgsa.data.inference_phrases import PhraseAnnotator

    src_dict, tag_dict, bpe, lines, trees = annotator_parts
    annotator = PhraseAnnotator(src_dict, tag_dict, 3, "trees", bpe=bpe)
    tokens, phrases = annotator(trees)
    ref_tokens, ref_levels = preprocessed(data_bin)
    assert len(tokens) == len(ref_tokens) == N_TEST
    for i in range(N_TEST):
        assert tokens[i].tolist() == ref_tokens[i].tolist()
        for k, (lengths, tags) in enumerate(phrases[i]):
            assert lengths.tolist() + tags.tolist() == ref_levels[k][i].tolist()
    assert annotator.unknown_tags == 0


def test_interactive_unknown_tag_is_counted_and_bad_tree_is_a_clear_error(annotator_parts):
    from fairseq_mgsa.data.inference_phrases import PhraseAnnotator
    from fairseq_mgsa.errors import MGSAError

    src_dict, tag_dict, bpe, lines, trees = annotator_parts
    annotator = PhraseAnnotator(src_dict, tag_dict, 3, "trees", bpe=bpe)
    renamed = trees[0].replace("(NP ", "(NOVELTAG ", 1)
    assert renamed != trees[0]
    _, phrases = annotator([renamed])
    assert annotator.unknown_tags >= 1
    assert any(t == tag_dict.unk() for lengths, tags in phrases[0] for t in tags.tolist())
    with pytest.raises(MGSAError, match=r"input line 2: expected one bracketed tree"):
        annotator([trees[1], "the cat sleeps"])


def test_interactive_text_input_without_a_stanza_model_is_a_one_line_error(data_bin, checkpoint, tmp_path):
    """Text input goes to stanza (here: no model for the language, and no network or no
    such language to fetch): one line saying what to do, no traceback."""
    proc = subprocess.run(["fairseq-interactive", data_bin, "--user-dir", USER_DIR, "--task", "mgsa_translation",
                           "--bpe", "subword_nmt", "--bpe-codes", data_bin.parent / "codes", "--path", checkpoint,
                           "--stanza-dir", tmp_path / "no-models", "--cpu"], cwd=tmp_path,
                          input="some cat watched the dog .\n", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "fairseq-mgsa error: cannot load the stanza pipeline for language 'src'" in proc.stderr
