"""fairseq-train --bf16 trains in bfloat16 on the run's device (fairseq_mgsa/fairseq_patches/bf16.py); on the CPU
here, where fairseq 0.12 itself took its TPU (XLA) path and failed at update 0: syntactic MG-SA
(phrase fields in the batches), --bf16 and --memory-efficient-bf16, then fairseq-generate of
the checkpoint (fp32: fairseq-generate has no bf16 path)."""

import re

import pytest
import torch

from tests.fairseq_runs import SYSTEMS, make_data_bin, run, train_command

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

SYNTACTIC = next(s for s in SYSTEMS if s[0] == "mgsa_syntactic")
UPDATES = 12


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return make_data_bin(tmp_path_factory.mktemp("bf16"))


def losses(log):
    """The per-update training losses of fairseq's simple log format."""
    return [float(x) for x in re.findall(r" loss=([\d.]+|nan|inf),", log)]


@pytest.mark.parametrize("flag", ["--bf16", "--memory-efficient-bf16"])
def test_bf16_trains_in_bfloat16_and_decodes(data_bin, tmp_path, flag):
    save = tmp_path / "ckpt"
    log = run(train_command(data_bin, save, SYNTACTIC, UPDATES, [flag]), tmp_path)
    assert "xla" not in log.lower(), log[-3000:]
    assert "--bf16: bfloat16 on cpu" in log
    assert re.findall(r"num_updates (\d+)", log)[-1] == str(UPDATES)
    found = losses(log)
    assert len(found) >= UPDATES and all(x == x for x in found) and found[-1] < found[0], found

    # the model ran in bfloat16: the same run in fp32 gives other losses, apart by bf16's rounding
    # (fairseq saves half-precision weights as float32, so the checkpoint cannot tell)
    fp32 = losses(run(train_command(data_bin, tmp_path / "fp32", SYNTACTIC, UPDATES), tmp_path))
    assert len(fp32) == len(found) and found != fp32
    assert max(abs(a - b) for a, b in zip(found, fp32)) < 0.2, (found, fp32)
    state = torch.load(save / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["cfg"]["common"]["bf16"] and not state["cfg"]["common"]["tpu"]

    out = run(["fairseq-generate", str(data_bin), "--user-dir", train_command(data_bin, save, SYNTACTIC, 1)[3],
               "--task", SYNTACTIC[1], "--path", str(save / "checkpoint_last.pt"), "--gen-subset", "valid",
               "--beam", "2", "--batch-size", "8", "--required-batch-size-multiple", "1", "--cpu",
               "--num-workers", "0"], tmp_path)
    hyps = re.findall(r"^H-(\d+)\t(\S+)\t", out, re.M)
    assert len({i for i, _ in hyps}) == 16, out[-2000:]  # every valid sentence of make_data_bin
    assert all(float(score) == float(score) and abs(float(score)) < 1e4 for _, score in hyps)
