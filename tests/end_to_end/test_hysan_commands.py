"""The real commands with `hysan_transformer`, for each fusion: fairseq-train (task
`translation` on plain fairseq-preprocess data) -> resume from checkpoint_last.pt ->
fairseq-generate --beam 4 -> fairseq-interactive, on a tiny generated corpus."""

import re
import subprocess

import pytest

from tests.end_to_end.test_fairseq_commands import N_TEST, TINY, USER_DIR, data_bin, last_num_updates, run  # noqa: F401

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

HYSAN = TINY
GATE = ["--hysan-gate-reduction", "4"]  # the squeeze gate at the tiny width (refused with other fusions)


def train(data_bin, save_dir, max_update, extra):
    return run(["fairseq-train", str(data_bin), "--user-dir", USER_DIR, "--task", "translation",
                "--arch", "hysan_transformer", *HYSAN, *extra, "--optimizer", "adam", "--lr", "1e-3",
                "--max-tokens", "800", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                "--max-update", str(max_update), "--save-dir", str(save_dir), "--no-progress-bar",
                "--log-interval", "1", "--cpu", "--seed", "2"], data_bin.parent)


def hypothesis_ids(out):
    return sorted(int(m) for m in re.findall(r"^H-(\d+)\t", out, flags=re.M))


@pytest.mark.parametrize("fusion", ["add", "concat", "gate"])
def test_train_resume_generate_interactive(data_bin, tmp_path, fusion):
    save = tmp_path / "ckpt"
    opts = ["--hysan-fusion", fusion, "--hysan-encoder-branches", "global,forward,backward,local1,local2",
            *(GATE if fusion == "gate" else [])]
    log = train(data_bin, save, 4, opts)
    assert "model: HySANTransformerModel" in log
    assert "(0-1): 2 x HySANEncoderLayer(" in log and "(0): HySANDecoderLayer(" in log
    assert f"{fusion}, branches=5" in log and f"{fusion}, branches=2" in log  # encoder, decoder fusion
    assert last_num_updates(log) == 4

    log = train(data_bin, save, 7, opts)  # resumes from checkpoint_last.pt
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 4 updates\)", log), log[-2000:]
    assert last_num_updates(log) == 7

    # --required-batch-size-multiple 1: see test_fairseq_commands.py (fairseq drops a short last batch)
    out = run(["fairseq-generate", str(data_bin), "--user-dir", USER_DIR, "--path", str(save / "checkpoint_last.pt"),
               "--beam", "4", "--max-tokens", "2000", "--required-batch-size-multiple", "1", "--cpu"], tmp_path)
    assert hypothesis_ids(out) == list(range(N_TEST))  # exactly one hypothesis per test sentence
    assert re.search(r"Generate test with beam=4: BLEU4 = [\d.]+", out)

    out = run(["fairseq-interactive", str(data_bin), "--user-dir", USER_DIR, "--path", str(save / "checkpoint_last.pt"),
               "--source-lang", "src", "--target-lang", "tgt", "--beam", "4", "--buffer-size", "8",
               "--batch-size", "8", "--input", str(data_bin.parent / "raw" / "test.src"), "--cpu"], tmp_path)
    assert hypothesis_ids(out) == list(range(N_TEST))


def test_a_bad_hysan_option_is_one_line_without_traceback(data_bin):
    proc = subprocess.run(["fairseq-train", str(data_bin), "--user-dir", USER_DIR, "--arch", "hysan_transformer",
                           *HYSAN, "--hysan-decoder-branches", "global,backward", "--cpu"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "fairseq-mgsa error: --hysan-decoder-branches 'global,backward': directional branch 'backward' " \
           "is for the encoder only" in proc.stderr
