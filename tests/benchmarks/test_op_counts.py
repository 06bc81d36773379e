"""The operator and synchronisation counter (benchmarks/op_counts) on hand-made
functions whose counts are known, then on every registered system: none may make the host wait
for the device more often per training update than the Transformer does."""

import argparse
import contextlib
import os
import re

import pytest
import torch

from benchmarks.training import data as bdata
from benchmarks import op_counts
from benchmarks.training import update
from fairseq_mgsa import systems as registry
from tests.fairseq_runs import USER_DIR, make_data_bin
from tests.paths import ROOT


def counts(fn, *args):
    return op_counts.count(fn, *args)[1]


@pytest.fixture
def x():
    torch.manual_seed(0)
    return torch.randn(4, 5)


def test_an_item_is_one_kernel_and_one_sync(x):
    c = counts(lambda: x.sum().item())
    assert (c["kernel_ops"], c["host_syncs"]) == (1, 1)
    assert c["by_op"] == {"sum": 1} and c["syncs_by_kind"] == {"item": 1}


def test_a_boolean_mask_index_syncs_and_an_integer_index_does_not(x):
    c = counts(lambda: x[x > 0])  # gt, index: the output's length is the number of True values
    assert (c["kernel_ops"], c["host_syncs"]) == (2, 1) and c["syncs_by_kind"] == {"boolean index": 1}
    c = counts(lambda: x[torch.tensor([0, 2])])
    assert (c["kernel_ops"], c["host_syncs"]) == (1, 0)
    c = counts(lambda: x.masked_fill(x > 0, 0.0))  # the sync-free way
    assert (c["kernel_ops"], c["host_syncs"]) == (2, 0)


def test_data_dependent_shapes_and_copies_to_the_host_sync(x):
    for fn, kind in ((lambda: x.nonzero(), "nonzero"), (lambda: torch.where(x > 0), "nonzero"),
                     (lambda: x.masked_select(x > 0), "masked_select"),
                     (lambda: torch.unique(x.round()), "unique"),
                     (lambda: torch.arange(3).repeat_interleave(torch.tensor([1, 2, 3])), "repeat_interleave"),
                     (lambda: x.tolist(), "to host"), (lambda: x.cpu(), "to host")):
        assert counts(fn)["syncs_by_kind"] == {kind: 1}, kind
    # caught at the Python call during the count only: torch's own methods are back afterwards
    assert not {"tolist", "cpu", "numpy"} & set(torch.Tensor.__dict__)
    # told its output size, repeat_interleave need not wait
    c = counts(lambda: torch.arange(3).repeat_interleave(torch.tensor([1, 2, 3]), output_size=6))
    assert c["host_syncs"] == 0
    # `if mask.any():` reads the device; the tensor `mask.any()` alone does not
    c = counts(lambda: 1 if (x > 0).any() else 0)
    assert (c["kernel_ops"], c["host_syncs"]) == (2, 1)
    assert counts(lambda: (x > 0).any())["host_syncs"] == 0


def test_views_allocations_and_host_scalars_are_left_out(x):
    c = counts(lambda: (x.view(20).unsqueeze(0).transpose(0, 1).expand(20, 3), x[1:, ::2], x.t()[0], x.detach(),
                        x.unbind(0), x.reshape(5, 4)))
    assert (c["kernel_ops"], c["host_syncs"]) == (0, 0) and c["left_out"]["view"] >= 9
    c = counts(lambda: (torch.empty(3), torch.empty_like(x), x.new_empty(2)))
    assert (c["kernel_ops"], c["host_syncs"]) == (0, 0) and c["left_out"]["bare allocation"] == 3

    def step_counter():  # as an optimizer's step: a 0-dim host tensor, incremented and read
        step = torch.tensor(0.0)
        step += 1
        return 0.9 ** float(step)
    c = counts(step_counter)
    assert (c["kernel_ops"], c["host_syncs"]) == (0, 0) and c["left_out"]["host-side scalar"] >= 2

    def found_inf():  # as GradScaler's: a 0-dim flag that device data is written into, then read
        flag = torch.zeros(())
        torch._foreach_add_([flag], [x.isinf().any().float()])
        return bool(flag)
    c = counts(found_inf)
    assert (c["kernel_ops"], c["host_syncs"]) == (4, 1)  # isinf, any, the cast, the foreach add; bool
    # a copy that is not a view is a kernel: reshape of a transposed tensor
    assert counts(lambda: x.t().reshape(20))["by_op"] == {"clone": 1}


def test_backward_and_foreach_are_counted_in_their_phases(x):
    w, other = torch.randn(4, 5, requires_grad=True), torch.ones(3)
    counter = op_counts.OpCounter()
    with counter:
        with counter.phase("forward"):
            loss = (w * x).sum()  # mul, sum
        with counter.phase("backward"):
            loss.backward()  # the seed (ones_like), sum's backward (an expand: a view), mul by x
        with counter.phase("optimizer"):
            torch._foreach_mul_([w.grad, other], 0.5)  # one foreach operator, however many tensors
    c = counter.summary()
    assert c["by_phase"]["forward"] == {"kernel_ops": 2, "host_syncs": 0}
    assert c["by_phase"]["backward"] == {"kernel_ops": 2, "host_syncs": 0}
    assert c["by_phase"]["optimizer"] == {"kernel_ops": 1, "host_syncs": 0}
    assert c["kernel_ops"] == 5
    assert torch.equal(w.grad, x * 0.5) and torch.equal(other, torch.full((3,), 0.5))


def test_operators_are_told_by_the_module_that_runs_them_forward_and_backward():
    """count_update's by_module: a module's forward operators and the backward of what it made,
    layers of a stack added up, an operator outside any module named by its autograd node."""
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.tanh(self.lin(x)) * 2  # the block's own tanh and mul around its linear

    model = torch.nn.Sequential(Block(), Block())
    x = torch.randn(3, 4)

    def step(sample, phase):
        with phase("forward"):
            loss = model(sample).exp().sum()  # exp and sum outside any module
        with phase("backward"):
            loss.backward()

    step(x, lambda name: contextlib.nullcontext())
    c = op_counts.count_update(step, x, torch.device("cpu"), modules=(model,))
    m = c["by_module"]
    assert sum(v["kernel_ops"] for v in m.values()) == c["kernel_ops"]
    # two layers: addmm forward; backward mm (input), mm (weight), sum (bias), each added into .grad
    assert m["Sequential.*.lin"]["forward"] == 2
    assert m["Sequential.*.lin"]["ops"]["backward mm"] == 3  # the first layer's input needs no gradient
    assert m["Sequential.*"]["ops"]["forward tanh"] == 2 and m["Sequential.*"]["ops"]["backward tanh_backward"] == 2
    assert m["(outside any module)"]["forward"] == 2  # exp, sum
    assert m["(ExpBackward0)"]["backward"] == 1


def test_the_cpus_dropout_counts_as_the_gpus_one_fused_operator(x):
    w = x.clone().requires_grad_()
    counter = op_counts.OpCounter()
    with counter:
        with counter.phase("forward"):
            loss = torch.nn.functional.dropout(w, 0.5, training=True).sum()  # CPU: bernoulli_, div_, mul; sum
        with counter.phase("backward"):
            loss.backward()  # the seed, the mul by the mask (native_dropout_backward on a GPU)
    c = counter.summary()
    assert c["by_phase"]["forward"]["kernel_ops"] == 2 and c["by_op"]["native_dropout"] == 1
    assert c["by_phase"]["backward"]["kernel_ops"] == 2
    kept = w.grad != 0  # the mask, scaled by 1 / (1 - p)
    assert torch.equal(w.grad[kept], torch.full_like(w.grad[kept], 2.0))


def test_the_plugins_device_choices_are_counted_as_a_gpu_makes_them():
    """Every branch of the plugin on the device must be one that as_on_gpu() sets: a new one would
    make the CPU count something else than a GPU runs."""
    branches = []
    for folder, _, files in os.walk(os.path.join(ROOT, "fairseq_mgsa")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    branches += [os.path.relpath(path, ROOT) for line in f if not line.strip().startswith("#")
                                 and re.search(r"\.is_cuda\b|device\.type\b|\.is_cpu\b|cuda\.is_available", line)]
    # the branches that need no setting: bf16.py reads the device when options are parsed (no
    # tensor work); recurrence_path.py picks, inside a registered operator (a cell, or the whole
    # recurrence), the Triton kernel or the torch arithmetic, which the count sees once either
    # way (test_recurrence.py checks it)
    same_count = {"fairseq_mgsa/fairseq_patches/bf16.py", "fairseq_mgsa/ops/recurrence_path.py"}
    assert sorted(b for b in branches if b not in same_count) == ["fairseq_mgsa/modules/mgsa/phrase_memory.py"]
    from fairseq_mgsa.modules.mgsa.phrase_memory import PhraseMemory
    model = torch.nn.Sequential(PhraseMemory(3, 16, 8, "san", "onlstm", 4))
    assert model[0].compose_all_at_once is None
    assert op_counts.as_on_gpu(model) == 1 and model[0].compose_all_at_once is True


def test_a_sync_names_the_line_that_asked_for_it(x):
    c = counts(lambda: int(x.argmax()))
    [site] = c["sync_sites"]
    assert site.startswith("item (_local_scalar_dense) at tests/benchmarks/test_op_counts.py:")


# ---------------------------------------------------------------- every system
# The base architectures' layers (6 + 6: fairseq's padding checks sync once per encoder layer),
# with small dimensions: the syncs of an update depend on the layers, not on their width.
SMALL_BASE = registry.dims(6, 64, 128, 8)


@pytest.fixture(scope="module")
def system_counts(tmp_path_factory):
    data = str(make_data_bin(tmp_path_factory.mktemp("op_counts")))
    a = argparse.Namespace(lr=5e-4, max_tokens=1024, seed=1, amp_dtype=None)
    common = bdata.common_args(a, data, USER_DIR)
    task, [batch] = bdata.build_batches(bdata.parse(common + ["--task", "mgsa_translation", "--arch", "transformer",
                                                             "--criterion", "label_smoothed_cross_entropy"]),
                                        1, torch.device("cpu"))
    out = {}
    for s in registry.distinct_models():  # SMALL_BASE fixes the layers: a depth variant is its original
        name = s.name
        args = bdata.parse(common + s.train_args("base") + list(SMALL_BASE))
        out[name] = update.flops_per_update(args, task, batch, a, torch.device("cpu"), count_ops=True)["ops"]
    return out


@pytest.mark.parametrize("system", [s.name for s in registry.distinct_models() if s.name != registry.BASELINE])
def test_no_system_syncs_more_often_than_the_transformer(system_counts, system):
    base, ops = system_counts[registry.BASELINE], system_counts[system]
    assert base["kernel_ops"] > 0 and ops["kernel_ops"] > 0
    assert ops["host_syncs"] <= base["host_syncs"], (
        f"{system}: {ops['host_syncs']} host synchronisations per update, the Transformer "
        f"{base['host_syncs']}; where: {ops['sync_sites']}")
