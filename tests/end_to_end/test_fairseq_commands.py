"""The real commands: fairseq-preprocess -> fairseq-train (each composition and interaction)
-> resume from checkpoint_last.pt -> fairseq-generate, on a tiny generated corpus."""

import os
import re
import subprocess

import pytest

from mgsa_preprocess.synthetic import write_corpus

from tests.paths import ROOT
USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
N_TEST = 30
TINY = ["--encoder-layers", "2", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]


def run(cmd, cwd):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    write_corpus(str(tmp / "raw"), (("train", 200), ("valid", 20), ("test", N_TEST)), seed=3)
    run(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", "raw/train", "--validpref", "raw/valid", "--testpref", "raw/test",
         "--destdir", "data-bin", "--joined-dictionary", "--workers", "1"], tmp)
    return tmp / "data-bin"


def train(data_bin, save_dir, max_update, extra):
    return run(["fairseq-train", str(data_bin), "--user-dir", USER_DIR, "--arch", "mgsa_transformer", *TINY,
                *extra, "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "800",
                "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                "--max-update", str(max_update), "--save-dir", str(save_dir), "--no-progress-bar",
                "--log-interval", "1", "--cpu", "--seed", "2"], data_bin.parent)


def last_num_updates(log):
    return int(re.findall(r"num_updates (\d+)", log)[-1])


@pytest.mark.parametrize("composition,interaction", [("max", "none"), ("lstm", "lstm"), ("san", "onlstm")])
def test_train_resume_generate(data_bin, tmp_path, composition, interaction):
    save = tmp_path / "ckpt"
    opts = ["--mgsa-composition", composition, "--mgsa-interaction", interaction, "--mgsa-layers", "1,2"]
    log = train(data_bin, save, 4, opts)
    assert "model: MGSATransformerModel" in log
    assert last_num_updates(log) == 4
    assert (save / "checkpoint_last.pt").exists()

    log = train(data_bin, save, 7, opts)  # resumes from checkpoint_last.pt
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 4 updates\)", log), log[-2000:]
    assert last_num_updates(log) == 7

    # --required-batch-size-multiple 1: fairseq drops a last batch smaller than the
    # multiple (default 8) when batching, which would silently skip test sentences.
    out = run(["fairseq-generate", str(data_bin), "--user-dir", USER_DIR, "--path", str(save / "checkpoint_last.pt"),
               "--beam", "2", "--max-tokens", "2000", "--required-batch-size-multiple", "1", "--cpu"], tmp_path)
    ids = sorted(int(m) for m in re.findall(r"^H-(\d+)\t", out, flags=re.M))
    assert ids == list(range(N_TEST))
    assert re.search(r"Generate test with beam=2: BLEU4 = [\d.]+", out)


def test_a_bad_option_is_one_line_without_traceback(data_bin):
    proc = subprocess.run(["fairseq-train", str(data_bin), "--user-dir", USER_DIR, "--arch", "mgsa_transformer", *TINY,
                           "--mgsa-granularities", "word,ngram2,phrase", "--cpu"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "fairseq-mgsa error: unknown MG-SA granularity 'phrase'" in proc.stderr


HYDRA_CONFIG = """\
common: {{cpu: true, seed: 2, user_dir: {user_dir}, log_format: simple, log_interval: 1}}
task: {{_name: translation, data: {data}, source_lang: src, target_lang: tgt}}
model:
  _name: mgsa_transformer
  encoder_layers: 2
  decoder_layers: 1
  encoder_embed_dim: 16
  decoder_embed_dim: 16
  encoder_ffn_embed_dim: 32
  decoder_ffn_embed_dim: 32
  encoder_attention_heads: 4
  decoder_attention_heads: 4
  mgsa_layers: "1,2"
  mgsa_composition: lstm
  mgsa_interaction: onlstm
criterion: {{_name: label_smoothed_cross_entropy, label_smoothing: 0.1}}
optimizer: {{_name: adam}}
lr_scheduler: {{_name: fixed}}
dataset: {{max_tokens: 800}}
optimization: {{max_update: 3, lr: [0.001]}}
checkpoint: {{save_dir: {save}}}
"""


def test_hydra_train_builds_the_same_model_as_the_command_line(data_bin, tmp_path):
    """fairseq-hydra-train with the MG-SA options in a YAML config trains the model the
    same command-line options give: same losses after the same updates, same seed."""
    (tmp_path / "mgsa.yaml").write_text(HYDRA_CONFIG.format(user_dir=USER_DIR, data=data_bin, save=tmp_path / "hydra"))
    hydra_log = run(["fairseq-hydra-train", "--config-dir", str(tmp_path), "--config-name", "mgsa",
                     f"hydra.run.dir={tmp_path / 'hydra-out'}"], tmp_path)
    cli_log = train(data_bin, tmp_path / "cli", 3, ["--mgsa-layers", "1,2", "--mgsa-composition", "lstm",
                                                    "--mgsa-interaction", "onlstm", "--lr-scheduler", "fixed"])
    for log in (hydra_log, cli_log):
        assert "(0-1): 2 x MGSAEncoderLayer(" in log  # both encoder layers
        assert "(interaction): ONLSTMInteraction" in log
    losses = re.compile(r"epoch 001 \| loss ([\d.]+) \| nll_loss ([\d.]+)")
    assert losses.findall(hydra_log) and losses.findall(hydra_log) == losses.findall(cli_log)

    out = run(["fairseq-generate", str(data_bin), "--user-dir", USER_DIR, "--path",
               str(tmp_path / "hydra" / "checkpoint_last.pt"), "--beam", "2", "--max-tokens", "2000",
               "--required-batch-size-multiple", "1", "--cpu"], tmp_path)
    assert sorted(int(m) for m in re.findall(r"^H-(\d+)\t", out, flags=re.M)) == list(range(N_TEST))
