"""The hand-written recurrence (ops/recurrence.py, the default) against the plain one
recorded by autograd (StackedRecurrence.forward_reference), forward and gradients, and the
fused Triton cells (ops/triton/recurrence_cells.py) against the torch cells
(test_recurrence_loop.py: the whole-loop kernels against the torch step loop).

The Triton tests run where Triton imports: on a GPU for real, on the CPU through Triton's
interpreter (TRITON_INTERPRET=1 set before Triton is imported, e.g.
`PYTHONPATH=/path/to/triton TRITON_INTERPRET=1 pytest ...`); they skip otherwise.
"""

import importlib.util
import os
import sys

import pytest
import torch

from fairseq_mgsa.ops import recurrence as torch_cells, recurrence_path
from fairseq_mgsa.modules.mgsa.interaction import build_interaction
from fairseq_mgsa.ops.recurrence import recurrence, recurrence_ref

# (kind, Gr, B, P, embed_dim, dim, chunk_size, phrase counts Gr x B)
SHAPES = [
    ("onlstm", 3, 4, 7, 6, 8, 2, [[7, 3, 5, 1], [2, 4, 4, 4], [6, 6, 1, 2]]),  # counts differ by granularity
    ("onlstm", 3, 1, 5, 6, 8, 1, [[5], [3], [1]]),  # B = 1
    ("onlstm", 2, 3, 4, 5, 8, 4, [[4, 4, 2], [4, 1, 3]]),
    ("onlstm", 1, 2, 1, 4, 4, 2, [[1, 1]]),  # one step: no recurrent product
    ("lstm", 3, 4, 6, 6, 8, 0, [[2, 3, 6, 1], [4, 4, 4, 4], [1, 1, 1, 5]]),
    ("lstm", 2, 1, 3, 4, 4, 0, [[3], [2]]),
]


def plain(rec, g, counts):
    """The reference, its slots past each granularity's largest count set to 0 (where phases
    cannot slice a granularity away, the reference computes them)."""
    P = g.size(2)
    ends = counts.amax(dim=1)
    out = rec.forward_reference(g, ends.tolist())
    return out * (torch.arange(P, device=g.device) < ends.unsqueeze(1)).to(out.dtype).view(len(ends), 1, P, 1)


@pytest.mark.parametrize("kind,Gr,B,P,C,D,cs,counts", SHAPES)
def test_fast_recurrence_equals_plain_float64(kind, Gr, B, P, C, D, cs, counts):
    torch.manual_seed(0)
    rec = build_interaction(kind, Gr, C, D, cs or 2).double()
    counts = torch.tensor(counts)
    g = torch.randn(Gr, B, P, C, dtype=torch.float64, requires_grad=True)
    out, ref = rec(g, counts), plain(rec, g, counts)
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=1e-12)
    weights = torch.randn_like(out)
    leaves = [g, *rec.parameters()]
    grads = torch.autograd.grad((out * weights).sum(), leaves)
    ref_grads = torch.autograd.grad((ref * weights).sum(), leaves, allow_unused=True)  # one step: no W_hh
    for name, a, b, leaf in zip(["g"] + [n for n, _ in rec.named_parameters()], grads, ref_grads, leaves):
        torch.testing.assert_close(a, torch.zeros_like(leaf) if b is None else b, atol=1e-12, rtol=1e-10, msg=name)


@pytest.mark.parametrize("chunk_size", [0, 2])
@pytest.mark.parametrize("P", [1, 5])
def test_recurrence_equals_recurrence_ref_float64(chunk_size, P):
    """The fused operator against its reference function (same signature, autograd's backward)."""
    torch.manual_seed(6)
    D = 4
    K = 4 * D + (2 * D // chunk_size if chunk_size else 0)
    xg = torch.randn(2, 3, P, K, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, K, D, dtype=torch.float64, requires_grad=True)
    out, ref = recurrence(xg, w, chunk_size), recurrence_ref(xg, w, chunk_size)
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=1e-12)
    weights = torch.randn_like(out)
    grads = torch.autograd.grad((out * weights).sum(), [xg, w])
    ref_grads = torch.autograd.grad((ref * weights).sum(), [xg, w], allow_unused=True)  # one step: no W
    for a, b, leaf in zip(grads, ref_grads, [xg, w]):
        torch.testing.assert_close(a, torch.zeros_like(leaf) if b is None else b, atol=1e-12, rtol=1e-10)


def test_use_fast_path_false_runs_the_reference_and_fast_is_its_alias():
    """use_fast_path=False: StackedRecurrence.forward_reference (no registered recurrence operator
    dispatched); `fast`, the attribute scripts set after construction, is the same setting."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.add(func.name())
            return func(*args, **(kwargs or {}))

    torch.manual_seed(7)
    rec = build_interaction("onlstm", 2, 6, 8, 2, use_fast_path=False).double()
    g = torch.randn(2, 3, 4, 6, dtype=torch.float64)
    with Seen() as seen:
        rec(g, [4, 2])
    assert not any(n.startswith("mgsa_recurrence::") for n in seen.names), seen.names
    assert rec.fast is False
    rec.fast = True
    assert rec.use_fast_path is True
    with Seen() as seen:
        rec(g, [4, 2])
    assert any(n.startswith("mgsa_recurrence::onlstm_recurrence") for n in seen.names), seen.names


@pytest.mark.parametrize("chunk_size", [0, 2])
def test_hand_written_backward_by_finite_differences(chunk_size):
    torch.manual_seed(1)
    D, K = 4, 16 if not chunk_size else 16 + 2 * (4 // chunk_size)
    xg = torch.randn(2, 3, 4, K, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, K, D, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: recurrence(x, w, chunk_size), (xg, w))


def test_fast_recurrence_under_padding_equals_plain_through_the_layer():
    """MG-SA with ON-LSTM: the default path and the reference give the same outputs and gradients
    on a left-padded batch (the phrase counts of each granularity's sentences differ)."""
    from fairseq_mgsa.modules import MultiGranularitySelfAttention, ngram_partition

    torch.manual_seed(2)
    layers = {fast: MultiGranularitySelfAttention(16, 4, ["word", "ngram2", "ngram3", "ngram4"], interaction="onlstm",
                                                  use_fast_path=fast).double().eval() for fast in (True, False)}
    layers[False].load_state_dict(layers[True].state_dict())
    lengths = [11, 7, 3, 1]
    mask = torch.ones(len(lengths), max(lengths), dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, max(lengths) - n:] = False
    parts = {g: ngram_partition(mask, g.size) for g in layers[True].phrase_granularities}
    x = torch.randn(max(lengths), len(lengths), 16, dtype=torch.float64, requires_grad=True)
    real = (~mask).t().unsqueeze(-1).double()
    results = []
    for fast in (True, False):
        attn = layers[fast]
        out, _ = attn(x, key_padding_mask=mask, partitions=parts)
        loss = (out * real * torch.linspace(-1, 1, 16, dtype=torch.float64)).sum()
        results.append((out * real, torch.autograd.grad(loss, [x, *attn.parameters()])))
    (out, grads), (ref, ref_grads) = results
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=1e-12)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, atol=1e-11, rtol=1e-10)


@pytest.mark.parametrize("chunk_size", [0, 2])
@pytest.mark.parametrize("P", [1, 6])
def test_the_whole_recurrence_is_one_operator_each_way(chunk_size, P):
    """What a dispatch-level count sees (a GPU's launches, benchmarks' op counts): the recurrence
    of every step as one operator forward and one backward, then W's gradient as one product."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    D = 8
    K = 4 * D + (2 * (D // chunk_size) if chunk_size else 0)
    xg = torch.randn(2, 3, P, K, requires_grad=True)
    w = torch.randn(2, K, D, requires_grad=True)
    with Count() as counted:
        recurrence(xg, w, chunk_size).sum().backward()
    names = counted.ops
    kind = "onlstm" if chunk_size else "lstm"
    assert names.count(kind + "_recurrence") == 1 and names.count(kind + "_recurrence_backward") == 1
    assert not {"baddbmm", kind + "_cell", kind + "_cell_backward"} & set(names)
    # W's gradient: one product over steps 1..P-1 (zeros with one step)
    assert names.count("bmm") == (P > 1) and names.count("zeros_like") == (P == 1)


# ---------------------------------------------------------------- Triton

def triton_or_skip(device):
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed (CUDA builds of torch ship it)")
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("no GPU: Triton runs on the CPU through its interpreter, TRITON_INTERPRET=1")
    if device == "cpu":
        interpret_loops_on_numpy_2()
    from fairseq_mgsa.ops.triton import recurrence_cells
    return recurrence_cells


def interpret_loops_on_numpy_2():
    """Triton 3.6's interpreter holds a scalar as a one-element array and makes a loop bound an
    int with int(array), which numpy >= 2.4 refuses: the loop kernels (ops/triton/recurrence_loop.py)
    run `for t in range(0, P)`. The compiler has no such step; this gives the interpreter .item()."""
    from triton.runtime import interpreter

    patch = interpreter._patch_lang_tensor
    if getattr(patch, "mgsa_scalar_index", False):
        return

    def patched(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    patched.mgsa_scalar_index = True
    interpreter._patch_lang_tensor = patched


DEVICES = ["cuda"] if torch.cuda.is_available() else ["cpu"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("chunk_size,D", [(0, 12), (1, 12), (2, 12), (4, 8), (2, 128)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_triton_cells_equal_torch_cells(device, chunk_size, D, dtype):
    kernels = triton_or_skip(device)
    torch.manual_seed(3)
    K = 4 * D if not chunk_size else 4 * D + 2 * (D // chunk_size)
    z = torch.randn(2, 3, 5, K, device=device).to(dtype)[:, :, 2]  # a strided step, as the recurrence reads
    c = torch.randn(2, 3, D, device=device).to(dtype)
    dh = torch.randn(2, 3, 4, D, device=device).to(dtype)[:, :, 1]
    if chunk_size:
        fused, plain_ = (lambda *a: kernels.onlstm_cell(*a, chunk_size),
                         lambda *a: torch_cells.onlstm_cell_torch(*a, chunk_size))
        fused_b, plain_b = (lambda *a: kernels.onlstm_cell_backward(*a, chunk_size),
                            lambda *a: torch_cells.onlstm_cell_backward_torch(*a, chunk_size))
    else:
        fused, plain_ = kernels.lstm_cell, torch_cells.lstm_cell_torch
        fused_b, plain_b = kernels.lstm_cell_backward, torch_cells.lstm_cell_backward_torch
    # both compute in float32; half types differ by the rounding of the result (one unit in the last place)
    tol = {torch.float32: dict(atol=1e-6, rtol=1e-5), torch.float16: dict(atol=2e-3, rtol=2e-3),
           torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2)}[dtype]
    for prev in (None, c):
        got, want = fused(z, prev), plain_(z, prev)
        for a, b in zip(got, want):
            assert a.dtype == dtype
            torch.testing.assert_close(a, b, **tol)
        c_new = want[1]
        for dh_rec in (None, torch.randn_like(c)):
            for dc in (None, torch.randn_like(c)):
                got, want = fused_b(z, prev, c_new, dh, dh_rec, dc), plain_b(z, prev, c_new, dh, dh_rec, dc)
                for a, b in zip(got, want):
                    assert a.shape == b.shape and a.dtype == b.dtype
                    torch.testing.assert_close(a, b, **tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["lstm", "onlstm"])
@pytest.mark.parametrize("path", ["loop kernels", "cells"])
def test_recurrence_with_triton_equals_plain(device, kind, path, monkeypatch):
    """The layer through the whole-loop kernels (float32's path on a GPU) or, without them, the
    torch step loop with the fused cells (float64's), against the plain recurrence."""
    triton_or_skip(device)
    monkeypatch.setattr(recurrence_path, "TRITON_ON_CPU", True)
    t = torch.empty(0, device=device)
    assert recurrence_path.triton_kernels(t) is not None and recurrence_path.loop_kernels(t) is not None
    if path == "cells":
        monkeypatch.setattr(recurrence_path, "LOOP_MAX_D", 0)
    torch.manual_seed(4)
    rec = build_interaction(kind, 3, 6, 8, 2).to(device)
    counts = torch.tensor([[5, 2, 3], [1, 4, 4], [3, 3, 3]], device=device)
    g = torch.randn(3, 3, 5, 6, device=device, requires_grad=True)
    out, ref = rec(g, counts), plain(rec, g, counts)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    weights = torch.randn_like(out)
    grads = torch.autograd.grad((out * weights).sum(), [g, *rec.parameters()])
    ref_grads = torch.autograd.grad((ref * weights).sum(), [g, *rec.parameters()])
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


@pytest.fixture
def kernel_modules_restored(monkeypatch):
    """The kernel modules as they were before the test: one imported under TRITON_INTERPRET=1
    holds the interpreter's functions, and a later test on the same worker (compiling the
    kernels for a GPU, or running them on one) would get it from sys.modules."""
    names = [f"fairseq_mgsa.ops.triton.{m}" for m in ("recurrence_cells", "recurrence_loop")]
    before = {n: sys.modules[n] for n in names if n in sys.modules}
    monkeypatch.setattr(recurrence_path, "_modules", {})
    yield
    # absent where Triton is not installed: the test skipped before importing the kernels
    package = sys.modules.get("fairseq_mgsa.ops.triton")
    for n in names:
        attr = n.rsplit(".", 1)[1]
        if n in before:
            sys.modules[n] = before[n]
            setattr(package, attr, before[n])
        else:
            sys.modules.pop(n, None)
            if package is not None and hasattr(package, attr):
                delattr(package, attr)


def test_mgsa_no_triton_turns_the_kernels_off(monkeypatch, kernel_modules_restored):
    """MGSA_NO_TRITON=1 (docs/troubleshooting.md) gives the torch cells even where the Triton
    kernels would run (here: the interpreter on CPU tensors, when Triton imports)."""
    monkeypatch.setattr(recurrence_path, "TRITON_ON_CPU", True)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    t = torch.zeros(1)
    monkeypatch.setenv("MGSA_NO_TRITON", "1")
    assert recurrence_path.triton_kernels(t) is None and recurrence_path.loop_kernels(t) is None
    monkeypatch.delenv("MGSA_NO_TRITON")
    pytest.importorskip("triton")
    assert recurrence_path.triton_kernels(t) is not None and recurrence_path.loop_kernels(t) is not None
    # float64 has no loop kernels and keeps torch's cells (the Triton cells compute in float32)
    assert recurrence_path.loop_kernels(t.double()) is None and recurrence_path.triton_kernels(t.double()) is None
