"""Shared by the tests that run fairseq's commands on a tiny syntactic corpus:
the corpus (mgsa-preprocess with gold trees and subword-nmt BPE), tiny model options,
the systems to train, and reading parameters back from checkpoints."""

import os
import re
import socket
import subprocess

import torch

from fairseq_mgsa import systems as registry

from tests.paths import ROOT, checkout_pythonpath
USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
TINY = ["--encoder-layers", "2", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
NO_DROPOUT = ["--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0"]

# (name, task, arch, criterion, extra options): every system of the registry
# (fairseq_mgsa/systems.py) at base architecture with the TINY dimensions above, and
# syntactic MG-SA once more with the tag loss at weight 0 (which must still reach every
# parameter, for DDP).
SYSTEMS = [(s.name, s.task, s.arch("base"), s.criterion, [*s.model_args, *s.criterion_args])
           for s in registry.SYSTEMS.values()]
SYSTEMS.append(("mgsa_syntactic-tag0", *next(s for s in SYSTEMS if s[0] == "mgsa_syntactic")[1:4],
                ["--phrase-tag-weight", "0"]))


def make_data_bin(tmp, n_train=160, seed=5, bpe_symbols=40):
    """A tiny corpus with 3 phrase levels, binarized by mgsa-preprocess (in process)."""
    from subword_nmt.learn_bpe import learn_bpe

    from mgsa_preprocess.cli import main as mgsa_preprocess
    from mgsa_preprocess.synthetic import write_corpus

    raw = tmp / "raw"
    os.makedirs(tmp, exist_ok=True)
    write_corpus(str(raw), (("train", n_train), ("valid", 16)), seed=seed)
    with open(raw / "train.src") as src, open(raw / "train.tgt") as tgt, open(tmp / "codes", "w") as out:
        learn_bpe(list(src) + list(tgt), out, num_symbols=bpe_symbols)
    mgsa_preprocess(["--source-lang", "src", "--target-lang", "tgt", "--trainpref", str(raw / "train"),
                     "--validpref", str(raw / "valid"), "--trees-suffix", "tree", "--levels", "3",
                     "--bpe-codes", str(tmp / "codes"), "--destdir", str(tmp / "data-bin"),
                     "--joined-dictionary", "--workers", "1", "--no-progress-bar"])
    return tmp / "data-bin"


def make_chinese_data_bin(tmp, n_train=60, n_valid=16, seed=5, src_symbols=30, tgt_symbols=30):
    """A tiny Chinese-English corpus as a user prepares one: the grammar's Chinese source (no spaces)
    segmented by mgsa-segment-zh with its lexicon, separate BPE codes for each side, mgsa-preprocess
    with the gold trees and without --joined-dictionary (one dictionary per language)."""
    from subword_nmt.learn_bpe import learn_bpe

    from mgsa_preprocess.cli import main as mgsa_preprocess
    from mgsa_preprocess.segment_zh import segment_file
    from mgsa_preprocess.synthetic_zh import write_corpus

    raw, seg = tmp / "raw", tmp / "seg"
    os.makedirs(seg, exist_ok=True)
    write_corpus(str(raw), (("train", n_train), ("valid", n_valid)), seed=seed, src="zh", tgt="en")
    for split in ("train", "valid"):
        segment_file(str(raw / f"{split}.zh"), str(seg / f"{split}.zh"), user_dict=str(raw / "lexicon.dict"),
                     quiet=True)
        for suffix in ("en", "zh.tree"):
            os.link(raw / f"{split}.{suffix}", seg / f"{split}.{suffix}")
    for lang, symbols in (("zh", src_symbols), ("en", tgt_symbols)):
        with open(seg / f"train.{lang}", encoding="utf-8") as text, open(tmp / f"codes.{lang}", "w",
                                                                          encoding="utf-8") as out:
            learn_bpe(list(text), out, num_symbols=symbols)
    mgsa_preprocess(["--source-lang", "zh", "--target-lang", "en", "--trainpref", str(seg / "train"),
                     "--validpref", str(seg / "valid"), "--trees-suffix", "tree", "--levels", "3",
                     "--bpe-codes", str(tmp / "codes.zh"), "--tgt-bpe-codes", str(tmp / "codes.en"),
                     "--destdir", str(tmp / "data-bin"), "--workers", "1", "--no-progress-bar"])
    return tmp / "data-bin"


def train_command(data_bin, save_dir, system, max_update, extra=()):
    _, task, arch, criterion, options = system
    return ["fairseq-train", str(data_bin), "--user-dir", USER_DIR, "--task", task, "--arch", arch, *TINY,
            *options, "--criterion", criterion, "--label-smoothing", "0.1", "--optimizer", "adam",
            "--lr", "1e-3", "--max-tokens", "400", "--max-update", str(max_update), "--save-dir", str(save_dir),
            "--no-progress-bar", "--log-format", "simple", "--log-interval", "1", "--cpu", "--seed", "7",
            "--num-workers", "0", *extra]


def env():
    e = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=checkout_pythonpath())
    return e


def run(cmd, cwd):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env())
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}"
    return proc.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_params(checkpoint):
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    return {k: v.float() for k, v in state["model"].items()}


def train_log(log):
    """{update: {figure: value}} from fairseq's per-update training lines (--log-interval 1)."""
    out = {}
    for line in log.splitlines():
        if "| train_inner |" in line:
            figures = dict(re.findall(r"(\w+)=([^,\s]+)", line))
            out[int(figures["num_updates"])] = figures
    return out


def max_difference(a, b):
    assert a.keys() == b.keys()
    return max((a[k] - b[k]).abs().max().item() for k in a)
