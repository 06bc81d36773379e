"""The real commands with `--arch pba_transformer` on plain fairseq-preprocess data (task
`translation`): for every attention x mode pair, fairseq-train -> resume from
checkpoint_last.pt -> fairseq-generate --beam 4 -> fairseq-interactive; fairseq-hydra-train;
the plugin's criterion with a PBA model."""

import re
import subprocess

import pytest

from tests.end_to_end.test_fairseq_commands import N_TEST, TINY, USER_DIR, data_bin, last_num_updates, run  # noqa: F401

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

COMBOS = [("convkv", "heterogeneous"), ("queryk", "heterogeneous"), ("convkv", "homogeneous"),
          ("queryk", "homogeneous"), ("convkv", "interleaved"), ("queryk", "interleaved")]
# the plugin's criterion on three of them (no phrase files: its tag loss is simply absent)
CRITERION = {c: ("label_smoothed_cross_entropy_with_phrase_tags" if i % 2 else "label_smoothed_cross_entropy")
             for i, c in enumerate(COMBOS)}


def train(data_bin, save_dir, max_update, extra, criterion="label_smoothed_cross_entropy"):
    return run(["fairseq-train", str(data_bin), "--user-dir", USER_DIR, "--arch", "pba_transformer", *TINY,
                *extra, "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "800", "--criterion", criterion,
                "--label-smoothing", "0.1", "--max-update", str(max_update), "--save-dir", str(save_dir),
                "--no-progress-bar", "--log-interval", "1", "--cpu", "--seed", "2"], data_bin.parent)


def hypotheses(out):
    return sorted(int(m) for m in re.findall(r"^H-(\d+)\t", out, flags=re.M))


# two presets with `make test-long` (both attention kinds, both criteria; interleaved QUERYK is the
# registry's PBA system); the other four run with `make test-slow`
DEFAULT_COMBOS = {("convkv", "heterogeneous"), ("queryk", "interleaved")}


@pytest.mark.parametrize("attention,mode", [c if c in DEFAULT_COMBOS else pytest.param(*c, marks=pytest.mark.slow)
                                            for c in COMBOS])
def test_train_resume_generate_interactive(data_bin, tmp_path, attention, mode):
    save = tmp_path / "ckpt"
    opts = ["--pba-attention", attention, "--pba-mode", mode]
    criterion = CRITERION[(attention, mode)]
    log = train(data_bin, save, 3, opts, criterion)
    assert "model: PBATransformerModel" in log
    assert "PhraseBasedAttention" in log
    assert last_num_updates(log) == 3

    log = train(data_bin, save, 5, opts, criterion)  # resumes from checkpoint_last.pt
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 3 updates\)", log), log[-2000:]
    assert last_num_updates(log) == 5

    ckpt = str(save / "checkpoint_last.pt")
    out = run(["fairseq-generate", str(data_bin), "--user-dir", USER_DIR, "--path", ckpt, "--beam", "4",
               "--max-tokens", "2000", "--required-batch-size-multiple", "1", "--cpu", "--print-alignment"], tmp_path)
    assert hypotheses(out) == list(range(N_TEST))  # exactly one hypothesis per test sentence
    # token-level cross-attention weights reach fairseq's alignment output
    assert sorted(int(m) for m in re.findall(r"^A-(\d+)\t", out, flags=re.M)) == list(range(N_TEST))
    assert re.search(r"Generate test with beam=4: BLEU4 = [\d.]+", out)

    lines = (data_bin.parent / "raw" / "test.src").read_text().splitlines()[:4]
    proc = subprocess.run(["fairseq-interactive", str(data_bin), "--user-dir", USER_DIR, "--path", ckpt,
                           "--source-lang", "src", "--target-lang", "tgt", "--beam", "4", "--cpu"],
                          input="\n".join(lines) + "\n", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert hypotheses(proc.stdout) == list(range(len(lines)))


HYDRA_CONFIG = """\
common: {{cpu: true, seed: 2, user_dir: {user_dir}, log_format: simple, log_interval: 1}}
task: {{_name: translation, data: {data}, source_lang: src, target_lang: tgt}}
model:
  _name: pba_transformer
  encoder_layers: 2
  decoder_layers: 1
  encoder_embed_dim: 16
  decoder_embed_dim: 16
  encoder_ffn_embed_dim: 32
  decoder_ffn_embed_dim: 32
  encoder_attention_heads: 4
  decoder_attention_heads: 4
  pba_attention: queryk
  pba_mode: interleaved
  pba_ngrams: "1,2"
  pba_roles: "enc,cross"
criterion: {{_name: label_smoothed_cross_entropy, label_smoothing: 0.1}}
optimizer: {{_name: adam}}
lr_scheduler: {{_name: fixed}}
dataset: {{max_tokens: 800}}
optimization: {{max_update: 3, lr: [0.001]}}
checkpoint: {{save_dir: {save}}}
"""


def test_hydra_train_builds_the_same_model_as_the_command_line(data_bin, tmp_path):
    (tmp_path / "pba.yaml").write_text(HYDRA_CONFIG.format(user_dir=USER_DIR, data=data_bin, save=tmp_path / "hydra"))
    hydra_log = run(["fairseq-hydra-train", "--config-dir", str(tmp_path), "--config-name", "pba",
                     f"hydra.run.dir={tmp_path / 'hydra-out'}"], tmp_path)
    cli_log = train(data_bin, tmp_path / "cli", 3, ["--pba-attention", "queryk", "--pba-mode", "interleaved",
                                                    "--pba-roles", "enc,cross", "--lr-scheduler", "fixed"])
    for log in (hydra_log, cli_log):
        assert "(self_attn): PhraseBasedAttention" in log and "(encoder_attn): PhraseBasedAttention" in log
        assert "(q2_kernel): NGramConv" in log  # the interleaved QUERYK module
    losses = re.compile(r"epoch 001 \| loss ([\d.]+) \| nll_loss ([\d.]+)")
    assert losses.findall(hydra_log) and losses.findall(hydra_log) == losses.findall(cli_log)


def test_a_bad_option_is_one_line_without_traceback(data_bin):
    proc = subprocess.run(["fairseq-train", str(data_bin), "--user-dir", USER_DIR, "--arch", "pba_transformer", *TINY,
                           "--pba-mode", "interleaved", "--pba-ngrams", "1,2,3", "--cpu"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "fairseq-mgsa error: --pba-ngrams 1,2,3: the interleaved mode is defined for 1,2 only" in proc.stderr
