"""mgsa-attention end to end on tiny trained checkpoints: figures and matrices, the same weights
from trees and from the binarized split, batched or not; bad input is a one-line error before any
model runs; the <unk> share of the input; long sentences in capped figures. The weights
themselves against plain computations: test_attention_weights.py."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.paths import checkout_env, command


# ---- the command on tiny trained checkpoints ---------------------------------------------

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Baseline and syntactic MG-SA, one update each on the tiny syntactic corpus."""
    from tests.fairseq_runs import SYSTEMS, make_data_bin, run, train_command

    tmp = tmp_path_factory.mktemp("attention")
    data = make_data_bin(tmp, n_train=64)
    paths = {}
    for name in ("transformer", "mgsa_syntactic"):
        system = next(s for s in SYSTEMS if s[0] == name)
        run(train_command(data, tmp / name, system, 1, ["--no-epoch-checkpoints", "--disable-validation"]),
            cwd=str(tmp))
        paths[name] = str(tmp / name / "checkpoint_last.pt")
    return tmp, data, paths


def attention(*argv):
    from fairseq_mgsa.analysis.attention.cli import parse_args, run

    return run(parse_args([str(a) for a in argv]))


def error_of(*argv):
    """The one-line message mgsa-attention exits with."""
    from fairseq_mgsa.analysis.attention.cli import main

    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    message = str(e.value.code)
    assert message.startswith("mgsa-attention: error: ") and "\n" not in message
    return message


def test_command_side_by_side(trained):
    """Two checkpoints, two sentences: PNGs, npz matrices whose shapes and labels are the
    sentences' (tokens read back give the raw text), rows summing to 1."""
    import matplotlib.image

    tmp, data, paths = trained
    out = tmp / "maps"
    manifest = attention(data, "--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--out", out,
                         "--test-ids", "0,2", "--gen-subset", "valid", "--cross-attention")
    assert manifest["layer"] == 2  # right after the MG-SA layer (layer 1)
    from mgsa_preprocess.partition import partition
    from mgsa_preprocess.trees import parse_tree

    raw = (tmp / "raw" / "valid.src").read_text().splitlines()
    trees = (tmp / "raw" / "valid.src.tree").read_text().splitlines()
    for i in (0, 2):
        arrays = np.load(out / f"test{i}.npz")
        tokens = list(arrays["m0_tokens"])
        assert list(arrays["m1_tokens"]) == tokens and tokens[-1] == "</s>"
        assert " ".join(tokens[:-1]).replace("@@ ", "") == raw[i]
        n = len(tokens)
        for k in (0, 1):
            for layer in (1, 2):
                w = arrays[f"m{k}_enc{layer}"]
                assert w.shape == (4, n, n) and np.allclose(w.sum(-1), 1, atol=1e-5)
            cross = arrays[f"m{k}_cross1"]
            assert cross.shape == (4, len(arrays[f"m{k}_target_tokens"]), n)
            assert np.allclose(cross.sum(-1), 1, atol=1e-5)
        assert arrays["m1_mgsa1_word"].shape == (1, n, n)
        for level in (1, 2, 3):
            spans, tags = arrays[f"m1_mgsa1_syn{level}_spans"], arrays[f"m1_mgsa1_syn{level}_tags"]
            assert spans[0, 0] == 0 and spans[-1, 1] == n and (spans[1:, 0] == spans[:-1, 1]).all()
            assert spans[-1, 0] == n - 1 and tags[-1] == "</s>"  # EOS: a phrase of its own
            assert arrays[f"m1_mgsa1_syn{level}"].shape == (1, n, len(spans))
            assert np.allclose(arrays[f"m1_mgsa1_syn{level}"].sum(-1), 1, atol=1e-5)
        # the level-1 phrases are the gold tree's, tags included (read as mgsa-preprocess reads it)
        top, _ = parse_tree(trees[i], "valid.src.tree", i + 1)
        assert list(arrays["m1_mgsa1_syn1_tags"][:-1]) == [node[0] for node in partition(top, 1)[0]]
        for png in (f"test{i}_self_layer2.png", f"test{i}_m1_mgsa_layer1.png", f"test{i}_cross.png"):
            assert matplotlib.image.imread(str(out / png)).ndim == 3
        assert set(manifest["sentences"][f"test{i}"]["figures_seconds"]) == {
            f"test{i}_self_layer2.png", f"test{i}_m1_mgsa_layer1.png", f"test{i}_cross.png"}


def test_trees_input_equals_test_split(trained):
    """The same sentence as a bracketed tree (--input, fairseq-interactive's path) and from
    the binarized split (--test-ids): same tokens, same phrases, same weights."""
    tmp, data, paths = trained
    trees = (tmp / "raw" / "valid.src.tree").read_text().splitlines()
    (tmp / "trees.txt").write_text(trees[1] + "\n" + trees[0] + "\n")
    common = [data, "--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--gen-subset", "valid"]
    attention(*common, "--out", tmp / "from-trees", "--input", tmp / "trees.txt", "--source-input", "trees",
              "--bpe-codes", tmp / "codes", "--layer", "1")
    attention(*common, "--out", tmp / "from-ids", "--test-ids", "1", "--layer", "1")
    a, b = np.load(tmp / "from-trees" / "line1.npz"), np.load(tmp / "from-ids" / "test1.npz")
    assert sorted(a.files) == sorted(b.files)
    for key in a.files:
        if a[key].dtype.kind in "fi":
            assert np.allclose(a[key], b[key], atol=1e-5), key
        else:
            assert (a[key] == b[key]).all(), key
    assert os.path.exists(tmp / "from-trees" / "line1_self_layer1.png")


def test_batched_equals_one_by_one(trained):
    """Sentences of different lengths in one padded batch give the weights each gives alone."""
    tmp, data, paths = trained
    common = [data, "--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--test-ids", "3,0,5",
              "--gen-subset", "valid"]
    attention(*common, "--out", tmp / "batched")
    attention(*common, "--out", tmp / "alone", "--batch-size", "1")
    for i in (3, 0, 5):
        a, b = np.load(tmp / "batched" / f"test{i}.npz"), np.load(tmp / "alone" / f"test{i}.npz")
        assert a.files == b.files
        for key in a.files:
            assert (a[key] == b[key]).all() if a[key].dtype.kind not in "f" else np.allclose(a[key], b[key], atol=1e-5)


def test_bad_input(trained):
    tmp, data, paths = trained
    both = ["--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--out", tmp / "bad"]
    # a tree broken over two lines: the line count is not the sentence count
    trees = (tmp / "raw" / "valid.src.tree").read_text().splitlines()
    broken = tmp / "broken.txt"
    broken.write_text(trees[0] + "\n" + trees[1].replace(" (VP", "\n(VP") + "\n")
    message = error_of(data, *both, "--input", broken, "--source-input", "trees", "--bpe-codes", tmp / "codes")
    assert f"{broken}:2: unbalanced bracket" in message and "one bracketed tree per line" in message
    message = error_of(data, *both, "--test-ids", "0,99", "--gen-subset", "valid")
    assert "--test-ids 99" in message and str(data / "valid.src-tgt.src") in message and "16 sentences" in message
    message = error_of(data, *both, "--test-ids", "0", "--gen-subset", "valid", "--layer", "5")
    assert "--layer 5" in message and "1-2" in message


def test_missing_checkpoint_is_one_line(tmp_path):
    """From the console script: one line on stderr naming the file, no traceback (and no line
    of fairseq's import: issue 45, point 8)."""
    proc = subprocess.run(command("mgsa-attention", tmp_path, "--path", tmp_path / "nope.pt", "--out",
                                  tmp_path / "out", "--test-ids", "0"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=checkout_env())
    assert proc.returncode != 0
    assert proc.stderr == f"mgsa-attention: error: checkpoint {tmp_path / 'nope.pt'} not found (--path)\n"


def test_a_latin1_input_file_is_one_line(tmp_path):
    """--input is read before any checkpoint is loaded: a byte that is not UTF-8 is one line naming
    the line and column (issue 45, point 7), not a traceback."""
    data = tmp_path / "data"
    data.mkdir()
    for lang in ("src", "tgt"):
        (data / f"dict.{lang}.txt").write_text("the 5\n")
    (tmp_path / "model.pt").write_bytes(b"not read: the input fails first")
    text = tmp_path / "input.txt"
    text.write_bytes(b"the dog ran .\nthe caf" + "\u00e9".encode("latin-1") + b" was open .\n")
    proc = subprocess.run(command("mgsa-attention", data, "--path", tmp_path / "model.pt", "--out", tmp_path / "out",
                                  "--input", text),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=checkout_env())
    assert proc.returncode == 1
    assert proc.stderr == (f"mgsa-attention: error: {text}:2: not UTF-8 (byte 0xE9 at column 8); convert the file to "
                           f"UTF-8, e.g. iconv -f latin1 -t utf-8\n")
    assert not (tmp_path / "out").exists()


# ---- issue 27: the checks before the long work (point 8) -----------------------------------

@pytest.fixture(scope="module")
def other_dictionaries(tmp_path_factory):
    """A Transformer trained (one update) on a corpus with more BPE merges: larger dictionaries."""
    from tests.fairseq_runs import SYSTEMS, make_data_bin, run, train_command

    tmp = tmp_path_factory.mktemp("attention-other")
    data = make_data_bin(tmp, n_train=32, seed=9, bpe_symbols=60)
    system = next(s for s in SYSTEMS if s[0] == "transformer")
    run(train_command(data, tmp / "transformer", system, 1, ["--no-epoch-checkpoints", "--disable-validation"]),
        cwd=str(tmp))
    return data, str(tmp / "transformer" / "checkpoint_last.pt")


def test_not_a_checkpoint(trained):
    """--path at a text file, or at a torch file fairseq did not write: one line naming it."""
    import torch

    tmp, data, paths = trained
    text = tmp / "raw" / "valid.src"
    message = error_of(data, "--path", paths["transformer"], "--path", text, "--out", tmp / "x", "--test-ids", "0",
                       "--gen-subset", "valid")
    assert message == (f"mgsa-attention: error: {text} is not a fairseq checkpoint (--path): not a file torch.save "
                       f"wrote; expected a checkpoint fairseq-train saved (checkpoint_best.pt, checkpoint_last.pt)")
    weights = tmp / "weights.pt"
    torch.save({"weight": torch.zeros(2)}, weights)
    message = error_of(data, "--path", weights, "--out", tmp / "x", "--test-ids", "0", "--gen-subset", "valid")
    assert message.startswith(f"mgsa-attention: error: {weights} is not a fairseq checkpoint (--path): ")
    assert not (tmp / "x").exists()


def test_raw_text_folder_as_data(trained):
    tmp, data, paths = trained
    message = error_of(tmp / "raw", "--path", paths["transformer"], "--out", tmp / "x", "--test-ids", "0")
    assert message == (f"mgsa-attention: error: {tmp / 'raw'} holds no dictionary (dict.SRC.txt, dict.TGT.txt): "
                       f"DATA must be the binarized directory the checkpoints were trained on (the --destdir of "
                       f"mgsa-preprocess or fairseq-preprocess), not raw text")


@pytest.mark.parametrize("size", ["0", "-2"])
def test_batch_size(trained, size):
    tmp, data, paths = trained
    message = error_of(data, "--path", paths["transformer"], "--out", tmp / "x", "--test-ids", "0", "--batch-size",
                       size)
    assert message == f"mgsa-attention: error: --batch-size {size}: expected a positive number of sentences per forward"


def test_checkpoints_with_other_dictionaries(trained, other_dictionaries):
    """Side by side with a checkpoint of another corpus: the sizes that differ, read here from the
    checkpoint's embedding tables and DATA's dictionary files."""
    import torch
    from fairseq.data import Dictionary

    tmp, data, paths = trained
    _, other = other_dictionaries
    state = torch.load(other, map_location="cpu", weights_only=False)["model"]
    rows = {side: state[f"{side}.embed_tokens.weight"].size(0) for side in ("encoder", "decoder")}
    ours = {lang: len(Dictionary.load(str(data / f"dict.{lang}.txt"))) for lang in ("src", "tgt")}
    assert rows["encoder"] != ours["src"] and rows["decoder"] != ours["tgt"]
    message = error_of(data, "--path", paths["transformer"], "--path", other, "--out", tmp / "x", "--test-ids", "0",
                       "--gen-subset", "valid")
    assert message == (f"mgsa-attention: error: {other} was not trained on {data}'s dictionaries: source "
                       f"{rows['encoder']} symbols in the checkpoint, {ours['src']} in {data / 'dict.src.txt'}; target "
                       f"{rows['decoder']} symbols in the checkpoint, {ours['tgt']} in {data / 'dict.tgt.txt'} "
                       f"(--path {paths['transformer']} fits): DATA must be the data directory the checkpoints were "
                       f"trained on; two side by side must share it")
    assert not (tmp / "x").exists()


def test_layer_zero_is_refused(trained):
    """Layers are numbered from 1 (the bottom, docs/analyses.md): --layer 0 is not the default."""
    tmp, data, paths = trained
    message = error_of(data, "--path", paths["transformer"], "--out", tmp / "x", "--test-ids", "0",
                       "--gen-subset", "valid", "--layer", "0")
    assert message == f"mgsa-attention: error: --layer 0: {paths['transformer']} has encoder layers 1-2 (1 = bottom)"
    assert not (tmp / "x").exists()


# ---- issue 27: <unk> in the input (point 4) -------------------------------------------------

def reference_unknowns(data, words):
    """[<unk>, tokens] of whitespace-separated tokens, looked up in DATA's source dictionary."""
    from fairseq.data import Dictionary

    d = Dictionary.load(str(data / "dict.src.txt"))
    return [sum(d.index(w) == d.unk() for w in words), len(words)]


def test_text_not_split_into_subwords_is_refused(trained):
    """Raw words into a model trained on BPE: most of them <unk>, refused with the share and the fix."""
    tmp, data, paths = trained
    raw = (tmp / "raw" / "valid.src").read_text().splitlines()[:2]
    text = tmp / "words.txt"
    text.write_text("\n".join(raw) + "\n")
    unk, tokens = reference_unknowns(data, " ".join(raw).split())
    assert unk / tokens > 0.1
    message = error_of(data, "--path", paths["transformer"], "--out", tmp / "x", "--input", text)
    assert message == (f"mgsa-attention: error: {unk / tokens:.0%} of the source tokens of {text} are <unk> ({unk} "
                       f"of {tokens}) for {paths['transformer']}: its dictionary holds subwords ('@@' entries) and "
                       f"the input was not split into them: give --bpe-codes (the subword-nmt codes it was trained "
                       f"with)")
    assert not (tmp / "x").exists()


def test_unknown_words_are_drawn_with_a_warning(trained, caplog):
    """Segmented, but with characters the corpus never had: drawn, with the <unk> share on the
    terminal, in manifest.json and under the figure's title (its PNG Warning text)."""
    from PIL import Image
    from subword_nmt.apply_bpe import BPE

    tmp, data, paths = trained
    text = tmp / "unknown.txt"
    text.write_text("the quixotic farmer saw a zebra ; Ωμέγα .\nthe farmer met every dog .\n")
    with open(tmp / "codes") as codes:
        bpe = BPE(codes)
    lines = [bpe.process_line(line) for line in text.read_text().splitlines()]
    counts = [reference_unknowns(data, line.split()) for line in lines]
    unk, tokens = sum(c[0] for c in counts), sum(c[1] for c in counts)
    assert unk / tokens > 0.1 and counts[1][0] == 0
    with caplog.at_level("WARNING", logger="mgsa_attention"):
        manifest = attention(data, "--path", paths["transformer"], "--out", tmp / "unknown", "--input", text,
                             "--bpe-codes", tmp / "codes", "--layer", "1")
    warning = (f"{unk / tokens:.0%} of the source tokens of {text} are <unk> ({unk} of {tokens}) for "
               f"{paths['transformer']}: its figures show few of the real words (is the text tokenized as the "
               f"training data, and are --bpe-codes the model's own?)")
    assert manifest["checkpoints"][0]["unk"] == {"unk": unk, "tokens": tokens, "rate": round(unk / tokens, 4),
                                                 "warning": warning}
    assert warning in caplog.messages
    assert [manifest["sentences"][f"line{i}"]["unk"] for i in (1, 2)] == [[c] for c in counts]
    label = json.loads((tmp / "unknown" / "manifest.json").read_text())["checkpoints"][0]["label"]
    png = Image.open(tmp / "unknown" / "line1_self_layer1.png")
    assert png.text["Warning"] == (f"warning: {counts[0][0]} of the {counts[0][1]} source tokens are <unk> for "
                                   f"{label} ({counts[0][0] / counts[0][1]:.0%})")
    assert "Warning" not in Image.open(tmp / "unknown" / "line2_self_layer1.png").text


# ---- issue 27: long sentences (point 10) ----------------------------------------------------

def sentence(n, heads=4, seed=0):
    """The npz arrays of one n-token sentence, two checkpoints, layer 2 only: random rows summing to 1."""
    rng = np.random.default_rng(seed)
    tokens = np.array([f"w{i}" for i in range(n - 1)] + ["</s>"])
    arrays = {}
    for k in (0, 1):
        w = rng.random((heads, n, n))
        arrays[f"m{k}_tokens"], arrays[f"m{k}_enc2"] = tokens, w / w.sum(-1, keepdims=True)
    return arrays


def test_long_sentence_figure_is_capped(tmp_path):
    """A 20-token pair is drawn in full (every label, 0.28 in each); a 120-token pair would be
    7788 x 3872 pixels: capped at 36 in a side, one label in 2, said in the title."""
    from PIL import Image

    from fairseq_mgsa.analysis.attention.plots import figures

    labels = ["base", "mgsa"]
    written, capped = figures("short", sentence(20), labels, 2, str(tmp_path), False, False)
    assert capped == {} and Image.open(tmp_path / "short_self_layer2.png").size == (1628, 792)
    written, capped = figures("long", sentence(120), labels, 2, str(tmp_path), False, False)
    note = "120 tokens: figure capped at 36 x 35 in (36 in a side), 1 label in 2 shown (the npz holds every weight)"
    assert capped == {"long_self_layer2.png": note}
    png = Image.open(tmp_path / "long_self_layer2.png")
    assert png.size == (3960, 3872) and png.text["Warning"] == note


def test_long_sentence_memory_is_bounded(tmp_path):
    """1,100 tokens side by side, per head (8 panels in 2 rows of 4): the drawing process stays
    under 1.5 GB (0.8 GB measured, fairseq imported; drawn in full the figure would be
    1239 x 619 in, 136,000 x 68,000 pixels). The peak is the process's own VmHWM: getrusage's
    ru_maxrss keeps the high-water mark of the forked parent (a pytest worker of 1.6 GB made a
    trivial child read 1.6 GB), VmHWM starts afresh at exec."""
    script = ("import sys, numpy as np; sys.path.insert(0, sys.argv[2]); "
              "from test_attention_maps import sentence; "
              "from fairseq_mgsa.analysis.attention.plots import figures; "
              "_, capped = figures('long', sentence(1100), ['a', 'b'], 2, sys.argv[1], True, False); "
              "assert capped; "
              "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path), os.path.dirname(__file__)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak_kb = int(proc.stdout.split()[-1])
    assert peak_kb < 1.5 * 1024 ** 2, f"{peak_kb / 1024:.0f} MB"
