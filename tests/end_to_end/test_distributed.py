"""fairseq's data-parallel path (the one multi-GPU users take), run on CPU: 2 processes
(gloo, --ddp-backend legacy_ddp, one process per rank, docs/distributed.md) reach the
same parameters and log the same losses as 1 process with --update-freq 2 on the same
batches.

Why they must: rank r trains on batches r, r+2, ... of the same shuffled epoch, and one
process with --update-freq 2 groups batches (0, 1), (2, 3), ...: every update sums the
gradients of the same two batches and divides by the same total sample size. Only the
order of the float sums may differ (gloo's all-reduce against accumulation), hence a
tolerance rather than equality (measured here: 0 difference)."""

import subprocess

import pytest
import torch
from fairseq import options, tasks

from tests.fairseq_runs import NO_DROPOUT, SYSTEMS, env, free_port, make_data_bin, max_difference, model_params, run, \
    train_command, train_log

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

UPDATES = 3
TOLERANCE = 1e-6  # absolute, on every parameter, after 3 Adam updates at lr 1e-3
COMMON = ["--disable-validation", *NO_DROPOUT]  # dropout draws differ per rank


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return make_data_bin(tmp_path_factory.mktemp("ddp"))


def train_two_processes(data_bin, save, system):
    port = free_port()
    procs = [subprocess.Popen(
        train_command(data_bin, save, system, UPDATES, [
            *COMMON, "--distributed-world-size", "2", "--distributed-rank", str(rank),
            "--distributed-init-method", f"tcp://127.0.0.1:{port}", "--distributed-no-spawn",
            "--distributed-backend", "gloo", "--ddp-backend", "legacy_ddp"]),
        cwd=data_bin.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env())
        for rank in range(2)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=300)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-4000:]
    return logs[0]  # rank 0 logs the figures summed over both ranks


# MG-SA's systems and one of each peer with `make test-long` (about 25 s each); the other
# registered systems with `make test-slow`.
DEFAULT = ("mgsa_ngram", "mgsa_syntactic", "mgsa_syntactic-tag0", "pba_interleaved_queryk", "hysan")


@pytest.mark.parametrize("system", [s if s[0] in DEFAULT else pytest.param(s, marks=pytest.mark.slow)
                                    for s in SYSTEMS], ids=[s[0] for s in SYSTEMS])
def test_two_processes_equal_one_process_with_update_freq_2(data_bin, tmp_path, system):
    ddp_log = train_two_processes(data_bin, tmp_path / "ddp", system)
    assert "distributed init (rank 0)" in ddp_log, ddp_log[-3000:]
    one_log = run(train_command(data_bin, tmp_path / "one", system, UPDATES, [*COMMON, "--update-freq", "2"]),
                  data_bin.parent)

    ddp, one = train_log(ddp_log), train_log(one_log)
    assert sorted(ddp) == sorted(one) == list(range(1, UPDATES + 1))
    for u in ddp:
        # the same batches: words and sentences per update (rank 0 logs both ranks' sums, so
        # a rank that trained on nothing would halve them); then the same losses
        for key in ("wpb", "bsz", "loss", "nll_loss", "tag_loss", "gnorm"):
            assert ddp[u].get(key) == one[u].get(key), (u, key, ddp[u], one[u])
    if system[3].endswith("phrase_tags"):
        assert "tag_loss" in ddp[1]

    diff = max_difference(model_params(tmp_path / "ddp" / "checkpoint_last.pt"),
                          model_params(tmp_path / "one" / "checkpoint_last.pt"))
    assert diff <= TOLERANCE


@pytest.mark.parametrize("system", SYSTEMS, ids=[s[0] for s in SYSTEMS])
def test_every_parameter_gets_a_gradient(data_bin, system):
    """What fairseq's default --ddp-backend pytorch_ddp needs without --find-unused-parameters
    (DistributedDataParallel stops when a parameter gets no gradient in an update)."""
    model = gradients_of_one_batch(data_bin, system)
    assert [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None] == []
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_a_criterion_without_the_tag_loss_leaves_the_tag_classifier_unused(data_bin):
    """Why the README asks for --find-unused-parameters (or legacy_ddp) in this case."""
    name, task, arch, _, _ = next(s for s in SYSTEMS if s[2] == "mgsa_transformer_syntactic")
    model = gradients_of_one_batch(data_bin, (name, task, arch, "label_smoothed_cross_entropy", []))
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert missing == ["encoder.phrase_tag_classifier.weight", "encoder.phrase_tag_classifier.bias"]


def gradients_of_one_batch(data_bin, system):
    args = options.parse_args_and_arch(options.get_training_parser(), train_command(data_bin, "unused", system, 1)[1:])
    task = tasks.setup_task(args)
    task.load_dataset("train")
    model, criterion = task.build_model(args), task.build_criterion(args)
    ds = task.dataset("train")
    loss, _, _ = criterion(model, ds.collater([ds[i] for i in range(8)]))
    loss.backward()
    return model
