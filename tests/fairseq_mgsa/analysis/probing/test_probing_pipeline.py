"""mgsa-probe end to end on the grammar corpus: set-up 1 (a trained syntactic MG-SA
checkpoint read through its BPE and the task's phrase annotator), set-up 2 (from scratch)
and the partition-only control; batched pooling and features against plain references."""

import collections
import json
import shutil
import subprocess

import pytest
import torch

from fairseq_mgsa.analysis.probing.cli import main
from fairseq_mgsa.analysis.probing.labels import read_corpus, split_indices
from fairseq_mgsa.analysis.probing.train import Item, collate, pool
from tests.fairseq_runs import SYSTEMS, env, make_data_bin, train_command


def test_pool_matches_plain_mean():
    torch.manual_seed(0)
    items = [Item(torch.tensor([5, 6, 7, 8, 2]), [1, 3]), Item(torch.tensor([9, 2]), [1]),
             Item(torch.tensor([5, 6, 7, 2]), [2, 1])]
    batch = collate(items, pad=1)
    x = torch.randn(*batch.tokens.shape, 4)  # B x T x C
    sentences, words = pool(x, batch.tokens.eq(1), batch)
    ref_s, ref_w = [], []
    for b, it in enumerate(items):
        n = it.tokens.numel()
        ref_s.append(sum(x[b, t] for t in range(n)) / n)
        start = 0
        for size in it.pieces:
            ref_w.append(sum(x[b, t] for t in range(start, start + size)) / size)
            start += size
    assert torch.allclose(sentences, torch.stack(ref_s), atol=1e-6)
    assert torch.allclose(words, torch.stack(ref_w), atol=1e-6)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("probe")
    data_bin = make_data_bin(tmp, n_train=240)
    system = next(s for s in SYSTEMS if s[0] == "mgsa_syntactic")
    subprocess.run(train_command(data_bin, tmp / "ckpt", system, 2, ["--no-epoch-checkpoints"]), check=True,
                   env=env(), capture_output=True)
    return tmp


def test_frozen_features_batched_equal_alone(trained):
    from fairseq_mgsa.analysis.probing.encoders import FrozenEncoder
    from mgsa_preprocess.trees import iter_tree_texts

    raw = trained / "raw"
    frozen = FrozenEncoder(str(trained / "ckpt" / "checkpoint_last.pt"), bpe="subword_nmt",
                           bpe_codes=str(trained / "codes"))
    assert frozen.levels == 3
    corpus = read_corpus(str(raw / "valid.src.tree"), str(raw / "valid.src"))
    with open(raw / "valid.src.tree") as f:
        trees = list(iter_tree_texts(f, "valid"))
    items = frozen.items(corpus, trees)
    assert any(len(it.pieces) < it.tokens.numel() - 1 for it in items)  # BPE split some words
    sentences, words = frozen.features(items, 8, "test")
    for i in (0, 5, len(items) - 1):
        s, w = frozen.features(items[i:i + 1], 1, "test")
        assert torch.allclose(sentences[i], s[0], atol=1e-5)
        assert torch.allclose(words[i], w[0], atol=1e-5)


def test_probe_end_to_end(trained, tmp_path, capsys):
    raw = trained / "raw"
    out = tmp_path / "out"
    code = main(["--trees", str(raw / "train.src.tree"), "--text", str(raw / "train.src"), "--out", str(out),
                 "--tasks", "tense,tss,pos", "--checkpoint", f"syn={trained / 'ckpt' / 'checkpoint_last.pt'}",
                 "--bpe", "subword_nmt", "--bpe-codes", str(trained / "codes"),
                 "--scratch-systems", "transformer,mgsa_syntactic_plain", "--epochs", "2", "--scratch-epochs", "1",
                 "--batch-size", "32"])
    assert code == 0
    result = json.loads((out / "probing.json").read_text())
    assert [r["name"] for r in result["rows"]["pretrained"]] == ["syn"]
    assert [r["name"] for r in result["rows"]["scratch"]] == ["transformer", "mgsa_syntactic_plain"]
    assert result["rows"]["pretrained"][0]["syntactic"] and result["rows"]["scratch"][1]["syntactic"]
    rows = result["rows"]["pretrained"] + result["rows"]["scratch"] + [result["control"], result["control_encoder"]]
    for row in rows:
        assert set(row["test"]) == {"tense", "tss", "pos"}
        assert all(0 <= v <= 100 for v in row["test"].values())
    # the majority baseline against a plain count over the same seeded split
    corpus = read_corpus(str(raw / "train.src.tree"))
    test_ids = split_indices(len(corpus), 1)["test"]
    train_pos = collections.Counter(p for i in split_indices(len(corpus), 1)["train"] for p in corpus[i].labels["pos"])
    top = max(sorted(train_pos), key=lambda c: train_pos[c])
    test_pos = [p for i in test_ids for p in corpus[i].labels["pos"]]
    assert result["majority"]["pos"] == pytest.approx(100 * test_pos.count(top) / len(test_pos))
    table = (out / "probing.md").read_text()
    lines = table.splitlines()
    # the control sits right under every syntactic row
    for label in ("syn", "Syntactic Phrase (MG-SA syntactic, no interaction)"):
        k = next(i for i, line in enumerate(lines) if f"| {label} |" in line)
        assert "control: partition only, MLP on the boundaries" in lines[k + 1]
        assert "control: partition only, syntactic encoder" in lines[k + 2]
    assert "not comparable in absolute terms" in table and "| 8 | Syntactic Phrase + Interaction | 86.45" in table
    assert "| TSS |" in capsys.readouterr().out
    assert result["rows"]["pretrained"][0]["unknown_token_rate"] == 0 and result["warnings"] == []
    assert "- <unk> tokens of the probing text in each checkpoint's dictionary: syn 0.0%" in table.splitlines()


def run_cli(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    return code, err.splitlines()[-1] if err else ""


def test_bpe_checkpoint_without_bpe_is_refused(trained, tmp_path, capsys):
    raw, ckpt = trained / "raw", trained / "ckpt" / "checkpoint_last.pt"
    # reference: the probing text's words looked up in the checkpoint's dictionary file
    symbols = [line.split()[0] for line in (trained / "data-bin" / "dict.src.txt").read_text().splitlines()]
    words = (raw / "train.src").read_text().split()
    unknown = sum(w not in set(symbols) for w in words)
    pieces = sum(s.endswith("@@") for s in symbols)
    assert unknown / len(words) > 0.05 and pieces > 0
    code, last = run_cli(capsys, ["--trees", str(raw / "train.src.tree"), "--text", str(raw / "train.src"),
                                  "--out", str(tmp_path / "o"), "--tasks", "pos", "--checkpoint", f"syn={ckpt}",
                                  "--scratch-systems", "none"])
    assert code == 2  # before: probed on, the rate only in probing.json
    assert last == (f"mgsa-probe: error: {ckpt}: {100 * unknown / len(words):.1f}% of the probing text's tokens are "
                    f"<unk> in its dictionary ({unknown} of {len(words)}): the dictionary holds subwords ({pieces} of "
                    f"its {len(symbols) + 4} entries are BPE pieces, e.g. ending in '@@') and no --bpe was given; "
                    f"give the BPE it was trained with, e.g. --bpe subword_nmt --bpe-codes CODES (--checkpoint syn)")
    assert not (tmp_path / "o").exists()


def test_wrong_data_is_one_line(trained, tmp_path, capsys):
    raw, ckpt = trained / "raw", trained / "ckpt" / "checkpoint_last.pt"
    expected = "expected the data directory the checkpoint was trained on, holding its dictionaries dict.SRC.txt and " \
               "dict.TGT.txt"

    def run(data):
        return run_cli(capsys, ["--trees", str(raw / "valid.src.tree"), "--out", str(tmp_path / "o"), "--tasks", "pos",
                                "--checkpoint", f"syn={ckpt}", "--data", str(data), "--bpe", "subword_nmt",
                                "--bpe-codes", str(trained / "codes"), "--scratch-systems", "none"])

    # before: FileNotFoundError, "Could not infer language pair", a size mismatch: tracebacks
    assert run(tmp_path / "nowhere") == (2, f"mgsa-probe: error: {tmp_path / 'nowhere'}: no such directory (--data): "
                                            f"{expected}")
    assert run(raw) == (2, f"mgsa-probe: error: {raw}: no dict.*.txt in it (--data): {expected}")
    copy = tmp_path / "data-bin"
    shutil.copytree(trained / "data-bin", copy)
    (copy / "dict.tgt.txt").unlink()  # fairseq reads the languages src-tgt from the binaries' names
    assert run(copy) == (2, f"mgsa-probe: error: {ckpt}: --data {copy} has no dict.tgt.txt: {expected}")
    shutil.copy(trained / "data-bin" / "dict.tgt.txt", copy)
    for lang in ("src", "tgt"):  # a smaller dictionary than the model's embeddings
        lines = (copy / f"dict.{lang}.txt").read_text().splitlines(True)
        (copy / f"dict.{lang}.txt").write_text("".join(lines[:-8]))
    assert run(copy) == (2, f"mgsa-probe: error: {ckpt}: the dictionaries of --data {copy} are not the ones it was "
                            f"trained with (the embedding sizes differ): {expected}")
    assert not (tmp_path / "o").exists()


def test_boundary_features_by_hand(tmp_path):
    from fairseq_mgsa.analysis.probing.control import MAX_PHRASES, boundary_features

    trees = tmp_path / "t.tree"
    trees.write_text("(ROOT (S (NP (DT The) (NN dog)) (VP (VBD saw) (NP (NNP Anna))) (. .)))\n")
    sentences, words = boundary_features(read_corpus(str(trees)), 2)
    pad = MAX_PHRASES - 3, MAX_PHRASES - 5
    assert sentences[0].tolist() == [3, 2, 2, 1] + [0] * pad[0] + [5, 1, 1, 1, 1, 1] + [0] * pad[1]
    # "saw": position 2 of 5; level 1: in VP (length 2, offset 0, starts it, phrase 1 of 3); level 2: VBD alone
    assert words[0][2].tolist() == [2, 5, 2, 0, 1, 0, 1, 3, 1, 0, 1, 1, 2, 5]
