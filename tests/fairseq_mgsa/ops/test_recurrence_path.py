"""The recurrence's path selection and its way back (ops/recurrence_path.py): a Triton
failure or a kernel too large for the device's shared memory ends in the step loop with the
same numbers, said once; the registered operators' fake implementations (opcheck,
torch.compile); double backward refused in one line.

The selection is exercised on the CPU by standing in for the kernel module (the path is then
open to it, as on a GPU): what fails is the stand-in, what is checked is the real selection,
its log and the step loop's results."""

import logging
import types

import pytest
import torch

from fairseq_mgsa.ops import recurrence as step_loop, recurrence_path
from fairseq_mgsa.ops.recurrence import recurrence
from fairseq_mgsa.ops.recurrence_path import ops

LOGGER = "fairseq_mgsa.ops.recurrence_path"


def gates(D, chunk_size):
    return 4 * D + (2 * (D // chunk_size) if chunk_size else 0)


def inputs(chunk_size, D=8, dtype=torch.float32, P=5):
    torch.manual_seed(0)
    xg = torch.randn(2, 3, P, gates(D, chunk_size), dtype=dtype)
    w = torch.randn(2, gates(D, chunk_size), D, dtype=dtype) / D ** 0.5
    return xg, w


def forward_backward(xg, w, chunk_size):
    x, v = xg.clone().requires_grad_(), w.clone().requires_grad_()
    out = recurrence(x, v, chunk_size)
    return (out, *torch.autograd.grad(out, [x, v], torch.linspace(-1, 1, out.numel()).view_as(out).to(out.dtype)))


@pytest.fixture
def open_path(monkeypatch):
    """The Triton path open on CPU tensors (as for a CUDA tensor), with a stand-in loop module
    and no Triton cells; the selection's memory restored after."""
    recurrence_path.reset()
    monkeypatch.setattr(recurrence_path, "TRITON_ON_CPU", True)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("MGSA_NO_TRITON", raising=False)
    calls = []

    class DoesNotFit(Exception):
        pass

    def install(behaviour):
        def kernel(*args):
            calls.append(args)
            return behaviour(*args)
        names = ["lstm_recurrence", "lstm_recurrence_backward", "onlstm_recurrence", "onlstm_recurrence_backward"]
        module = types.SimpleNamespace(DoesNotFit=DoesNotFit, **{n: kernel for n in names})
        recurrence_path._modules[recurrence_path.LOOP_KERNELS] = module
        recurrence_path._modules[recurrence_path.CELL_KERNELS] = "Triton does not import (stand-in)"
        return module

    yield install, calls
    recurrence_path.reset()


def reference(xg, w, chunk_size, monkeypatch):
    monkeypatch.setenv("MGSA_NO_TRITON", "1")
    try:
        return forward_backward(xg, w, chunk_size)
    finally:
        monkeypatch.delenv("MGSA_NO_TRITON")


@pytest.mark.parametrize("chunk_size", [0, 2])
@pytest.mark.parametrize("error", [RuntimeError("PassManager::run failed"), AttributeError("no attribute 'dot'"),
                                   MemoryError("out of resource: shared memory")])
def test_a_failing_kernel_gives_one_warning_and_the_torch_numbers(open_path, chunk_size, error, caplog,
                                                                   monkeypatch):
    install, calls = open_path

    def fail(*args):
        raise error

    install(fail)
    xg, w = inputs(chunk_size)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        first = forward_backward(xg, w, chunk_size)
        second = forward_backward(xg, w, chunk_size)
    kind = "onlstm" if chunk_size else "lstm"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    # one warning per operator (forward, backward), naming what failed, the path taken and the switch
    assert len(warnings) == 2, [r.getMessage() for r in warnings]
    for r, direction in zip(warnings, ("forward", "backward")):
        message = r.getMessage()
        assert f"{kind} {direction}" in message and type(error).__name__ in message
        assert "the step loop" in message and "MGSA_NO_TRITON=1" in message and "\n" not in message
    assert len(calls) == 2  # tried once each way; that shape takes the torch path from then on
    want = reference(xg, w, chunk_size, monkeypatch)
    for a, b, c in zip(first, second, want):
        assert torch.equal(a, c) and torch.equal(b, c)


def test_a_kernel_too_large_for_the_device_takes_the_step_loop(open_path, caplog, monkeypatch):
    """The launcher's refusal (DoesNotFit: the compiled kernel's shared memory over the device's
    limit) is a choice, not a failure: logged at INFO, no warning, the step loop's numbers."""
    install, calls = open_path

    def too_large(*args):
        raise module.DoesNotFit("its loop kernel needs 67,584 bytes of shared memory a block, cuda:0 allows 65,536")

    module = install(too_large)
    xg, w = inputs(2)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        got = forward_backward(xg, w, 2)
        forward_backward(xg, w, 2)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    chosen = [r.getMessage() for r in caplog.records if "67,584" in r.getMessage()]
    assert len(chosen) == 2 and all("the step loop" in m for m in chosen)  # forward and backward, once each
    assert len(calls) == 2
    for a, b in zip(got, reference(xg, w, 2, monkeypatch)):
        assert torch.equal(a, b)


def test_the_launcher_checks_shared_memory_against_the_device_limit(monkeypatch):
    """_launch compares the compiled kernel's need with the limit the selection reads (a 64 KiB
    GPU simulated): over it, DoesNotFit before any launch; under it, the launch."""
    pytest.importorskip("triton")
    from fairseq_mgsa.ops.triton import recurrence_loop as loop

    launched = []

    class Kernel:
        fn = types.SimpleNamespace(__name__="_onlstm_loop_bwd")

        def __getitem__(self, grid):
            return lambda *args, **meta: launched.append(grid)

    monkeypatch.setattr(loop, "_NEED", {})
    monkeypatch.setattr(loop, "shared_memory_need", lambda kernel, grid, args, meta: 67584)
    t = torch.zeros(1)
    for limit, fits in ((64 * 1024, False), (96 * 1024, True)):
        monkeypatch.setattr(recurrence_path, "device_shared_memory", lambda device, limit=limit: limit)
        loop._NEED.clear()
        if fits:
            loop._launch(Kernel(), (1, 1), (t,), dict(BLOCK_D=512))
            assert launched == [(1, 1)]
        else:
            with pytest.raises(loop.DoesNotFit, match="67,584 bytes .* allows 65,536"):
                loop._launch(Kernel(), (1, 1), (t,), dict(BLOCK_D=512))
            assert not launched


def test_the_path_is_logged_once_with_its_reason(caplog):
    recurrence_path.reset()
    xg, w = inputs(0, D=6)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for _ in range(3):
            forward_backward(xg, w, 0)
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert messages == ["MG-SA recurrence (lstm forward, cpu, float32, D=6): the step loop (a cpu tensor)",
                        "MG-SA recurrence (lstm backward, cpu, float32, D=6): the step loop (a cpu tensor)"]


@pytest.mark.parametrize("width,reason", [(512, "D = 512 > 256"), (128, None)])
def test_wide_recurrences_take_the_per_step_path(width, reason, monkeypatch):
    recurrence_path.reset()
    monkeypatch.setattr(recurrence_path, "TRITON_ON_CPU", True)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("MGSA_NO_TRITON", raising=False)
    t = torch.zeros(1)
    got = recurrence_path._loop_reason(("x", "cpu", t.dtype, width), t, width)
    assert got == reason or (reason and got.startswith(reason))
    assert "float64 has no loop kernel" == recurrence_path._loop_reason(("x", "cpu", torch.float64, 128), t.double(), 128)


# ---------------------------------------------------------------- the operators as torch sees them

def operator_samples():
    """(operator, args) for every registered operator, with and without the optional tensors."""
    out = []
    for chunk_size in (0, 2):
        D = 4
        K = gates(D, chunk_size)
        z = torch.randn(2, 3, K)
        c, dh = torch.randn(2, 3, D), torch.randn(2, 3, D)
        cs = (chunk_size,) if chunk_size else ()
        kind = "onlstm" if chunk_size else "lstm"
        cell, cell_b = getattr(ops, kind + "_cell"), getattr(ops, kind + "_cell_backward")
        h, c_new = cell(z, c, *cs)
        out += [(cell, (z, None, *cs)), (cell, (z, c, *cs)),
                (cell_b, (z, None, c_new, dh, None, None, *cs)), (cell_b, (z, c, c_new, dh, dh, c, *cs))]
        xg = torch.randn(2, 3, 4, K)
        w = torch.randn(2, K, D)
        rec, rec_b = getattr(ops, kind + "_recurrence"), getattr(ops, kind + "_recurrence_backward")
        _, zz, cc, _ = rec(xg, w, *cs)
        out += [(rec, (xg, w, *cs)), (rec, (xg[:, :, :1], w, *cs)), (rec_b, (zz, cc, w, torch.randn(2, 3, 4, D), *cs))]
    return out


@pytest.mark.parametrize("op,args", operator_samples(), ids=lambda v: getattr(v, "__name__", ""))
def test_every_operator_passes_opcheck(op, args):
    """Schema, autograd registration, fake tensors and AOT dispatch (torch.library.opcheck)."""
    torch.library.opcheck(op, args)


@pytest.mark.parametrize("chunk_size", [0, 2])
def test_the_recurrence_compiles_whole_and_equals_eager(chunk_size):
    """torch.compile(fullgraph=True): no graph break, forward and gradients equal to eager."""
    torch._dynamo.reset()
    xg, w = inputs(chunk_size)

    def loss(x, v):
        return (recurrence(x, v, chunk_size) * torch.linspace(-1, 1, x.size(2)).view(1, 1, -1, 1)).sum()

    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    results = []
    for fn in (loss, compiled):
        x, v = xg.clone().requires_grad_(), w.clone().requires_grad_()
        out = fn(x, v)
        results.append((out, *torch.autograd.grad(out, [x, v])))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_double_backward_is_refused_in_one_line():
    """create_graph=True gives the gradient itself (a gradient penalty elsewhere still works);
    differentiating that gradient again is one clear error, not "does not require grad"."""
    xg, w = inputs(2)
    x, v = xg.clone().requires_grad_(), w.clone().requires_grad_()
    (gx,) = torch.autograd.grad(recurrence(x, v, 2).pow(2).sum(), x, create_graph=True)
    (want,) = torch.autograd.grad(recurrence(x, v, 2).pow(2).sum(), x)
    assert torch.equal(gx, want)
    with pytest.raises(RuntimeError) as info:
        gx.sum().backward()
    assert "no double backward" in str(info.value) and "\n" not in str(info.value)


def test_step_loop_is_what_the_operators_run_on_the_cpu():
    """The CPU path is the step loop itself (no stand-in): the operator's outputs are
    recurrence_torch's, bit for bit."""
    recurrence_path.reset()
    xg, w = inputs(2)
    for a, b in zip(ops.onlstm_recurrence(xg, w, 2), step_loop.recurrence_torch(xg, w, 2)):
        assert torch.equal(a, b)


def test_a_triton_that_does_not_import_is_the_reason_logged(monkeypatch, caplog):
    """A CUDA torch without Triton (or with a Triton of another API): the import's error is the
    reason the step loop is taken, said once, and nothing fails."""
    import importlib

    recurrence_path.reset()
    monkeypatch.setattr(recurrence_path, "TRITON_ON_CPU", True)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    real = importlib.import_module

    def no_triton(name, package=None):
        if name.startswith(".triton."):
            raise ImportError("No module named 'triton'")
        return real(name, package)

    monkeypatch.setattr(recurrence_path.importlib, "import_module", no_triton)
    xg, w = inputs(0)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        forward_backward(xg, w, 0)
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(messages) == 2 and all("the step loop (Triton does not import (ImportError: No module named "
                                      "'triton'))" in m for m in messages), messages
    recurrence_path.reset()


def test_rocm_takes_the_torch_path():
    class Rocm:  # what a ROCm build's CUDA tensor answers
        is_cuda = True
        device = torch.device("cpu")

    hip = torch.version.hip
    try:
        torch.version.hip = "6.2"
        assert "ROCm" in recurrence_path._triton_reason(Rocm())
    finally:
        torch.version.hip = hip
    assert recurrence_path._triton_reason(Rocm()) is None
