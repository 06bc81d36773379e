"""Exact resume: a syntactic MG-SA run (ON-LSTM interaction, dropout 0.1, tag loss) killed
with SIGKILL after the checkpoint of update K is written, then restarted with the same
command (fairseq resumes from checkpoint_last.pt), logs the same losses and reaches the
same parameters at update N as the run that was never interrupted: exactly equal.

Why it can be exact: fairseq saves the model, the optimizer state, the update count and
the data iterator's position inside the epoch (mid-epoch checkpoints from
--save-interval-updates), shuffles each epoch from --seed + epoch, and re-seeds torch's
RNG from --seed + update number before every update, so dropout after the restart
draws what it would have drawn. Nothing in MG-SA keeps state between updates.
Validation runs at every checkpoint, as in a user's run, and logs the same figures."""

import re
import shutil
import signal
import subprocess

import torch

from tests.fairseq_runs import SYSTEMS, env, make_data_bin, model_params, run, train_command, train_log

K, N = 4, 7  # killed after update K's checkpoint; compared at update N
SYNTACTIC = next(s for s in SYSTEMS if s[0] == "mgsa_syntactic")
OPTIONS = ["--dropout", "0.1", "--attention-dropout", "0.1", "--mgsa-interaction", "onlstm",
           "--save-interval-updates", str(K), "--no-epoch-checkpoints"]
FIGURES = ("loss", "nll_loss", "tag_loss", "tag_accuracy", "gnorm", "wpb", "bsz")


def kill_after_checkpoint(cmd, cwd, updates):
    """Run `cmd`; SIGKILL it as soon as it logs that checkpoint_last.pt holds `updates` updates.
    Returns the log up to then and the exit status (-SIGKILL, or 0 if it ended first)."""
    saved = re.compile(rf"Saved checkpoint .* \(epoch \d+ @ {updates} updates")
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env())
    log = []
    try:
        for line in proc.stdout:
            log.append(line)
            if saved.search(line):
                proc.send_signal(signal.SIGKILL)
                break
    finally:
        proc.kill()
        proc.wait()
    return "".join(log), proc.returncode


def test_killed_and_resumed_run_equals_the_uninterrupted_run(tmp_path):
    data_bin = make_data_bin(tmp_path)
    whole = run(train_command(data_bin, tmp_path / "whole", SYNTACTIC, N, OPTIONS), tmp_path)

    cmd = train_command(data_bin, tmp_path / "killed", SYNTACTIC, N, OPTIONS)
    for attempt in range(3):
        shutil.rmtree(tmp_path / "killed", ignore_errors=True)
        before, returncode = kill_after_checkpoint(cmd, tmp_path, K)
        assert returncode in (-signal.SIGKILL, 0), before[-3000:]
        state = torch.load(tmp_path / "killed" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
        # the kill must come before the next save (a loaded machine may delay it: try again)
        if returncode == -signal.SIGKILL and state["optimizer_history"][-1]["num_updates"] == K:
            break
    assert returncode == -signal.SIGKILL and state["optimizer_history"][-1]["num_updates"] == K, \
        "the process was never killed between the checkpoints"
    assert state["extra_state"]["train_iterator"]["iterations_in_epoch"] == K
    after = run(cmd, tmp_path)
    assert re.search(rf"Loaded checkpoint .*checkpoint_last\.pt \(epoch 1 @ {K} updates\)", after), after[-3000:]

    expected, first, second = train_log(whole), train_log(before), train_log(after)
    assert sorted(expected) == list(range(1, N + 1))
    assert set(range(1, K + 1)) <= set(first) and sorted(second) == list(range(K + 1, N + 1))
    for u in range(1, N + 1):
        got = first[u] if u <= K else second[u]
        assert {f: got.get(f) for f in FIGURES} == {f: expected[u].get(f) for f in FIGURES}, u
    assert "tag_loss" in expected[N]
    valid = re.compile(r"valid on 'valid' subset \| loss ([\d.]+) \| nll_loss ([\d.]+) .*\| num_updates (\d+)")
    assert valid.findall(before + after) == valid.findall(whole) and len(valid.findall(whole)) == 2

    resumed = model_params(tmp_path / "killed" / "checkpoint_last.pt")
    uninterrupted = model_params(tmp_path / "whole" / "checkpoint_last.pt")
    assert resumed.keys() == uninterrupted.keys()
    for name in resumed:
        assert torch.equal(resumed[name], uninterrupted[name]), name
    # and the check is not vacuous: the parameters did move after the restart
    at_k = {k: v.float() for k, v in state["model"].items()}
    assert any(not torch.equal(at_k[name], resumed[name]) for name in resumed)
