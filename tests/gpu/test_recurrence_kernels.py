"""The phrase-interaction recurrence on a GPU at the model's own widths: the persistent loop
kernels (ops/triton/recurrence_loop.py) called directly, and the recurrence through its path
selection (ops/recurrence_path.py), forward and gradients against float64; the path each width
takes; a 64 KiB device simulated; determinism; a second device.

D = 128 is the base model's width (3 phrase granularities), 256 the big model's, 1024 all 16
heads of the big model in one granularity. P up to 200 steps, B not a multiple of the
kernels' 16 rows. `pytest -m gpu` (make gpu-test) runs them with the other GPU tests. Errors are max |got - ref| / max |ref| against the float64 step loop; a
fused path passes within max(the dtype's floor, 3 x the error of the torch step loop in the
same dtype on the same GPU): a kernel bug shows far above what rounding gives the plain path.
"""

import os

import pytest
import torch

from fairseq_mgsa.ops import recurrence as recurrence_loops, recurrence_path
from fairseq_mgsa.ops.recurrence import recurrence

from tests.gpu.conftest import rehearsal

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _not_in_rehearsal():
    if rehearsal():  # Triton's interpreter runs them on the CPU: tests/fairseq_mgsa/modules/test_recurrence*.py
        pytest.skip("the Triton kernels run on a GPU only (on the CPU through the interpreter in test_recurrence*.py)")

FLOOR = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# (D, Gr, B, P): P = 200 at the base width; at D = 1024 the loop kernel (not the path the
# model takes there: LOOP_MAX_D) spills so much that 200 steps take seconds a call
SIZES = [(128, 3, 23, 200), (256, 3, 37, 64), (1024, 1, 21, 40)]


def gates(D, chunk_size):
    return 4 * D + (2 * (D // chunk_size) if chunk_size else 0)


def make(Gr, B, P, D, chunk_size, seed=0):
    g = torch.Generator().manual_seed(seed)
    K = gates(D, chunk_size)
    xg = torch.randn(Gr, B, P + 1, K, generator=g)[:, :, 1:]  # strided, as the layer's view
    w = torch.randn(Gr, K, D, generator=g) / D ** 0.5
    d_out = torch.randn(Gr, B, P, D, generator=g)
    return xg, w, d_out


def error(got, ref):
    ref = ref.double().cpu()
    return ((got.double().cpu() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def torch_path(fn):
    """fn() with every Triton kernel off (the torch step loop)."""
    before = os.environ.get("MGSA_NO_TRITON")
    os.environ["MGSA_NO_TRITON"] = "1"
    try:
        return fn()
    finally:
        if before is None:
            del os.environ["MGSA_NO_TRITON"]
        else:
            os.environ["MGSA_NO_TRITON"] = before


def loop_module():
    from fairseq_mgsa.ops.triton import recurrence_loop as recurrence_triton_loop
    return recurrence_triton_loop


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("chunk_size", [0, 2], ids=["lstm", "onlstm"])
@pytest.mark.parametrize("D,Gr,B,P", SIZES)
def test_loop_kernels_at_the_model_widths(D, Gr, B, P, chunk_size, dtype):
    """The kernels called directly, forward (H, Z, C, H_prev) and backward (dxg, dZ_later) from
    each path's own saved states, against the float64 step loop."""
    k = loop_module()
    xg, w, d_out = make(Gr, B, P, D, chunk_size)
    dev = [t.cuda() for t in (xg, w, d_out)]
    extra = (chunk_size,) if chunk_size else ()
    fwd = k.onlstm_recurrence if chunk_size else k.lstm_recurrence
    bwd = k.onlstm_recurrence_backward if chunk_size else k.lstm_recurrence_backward
    ref = torch_path(lambda: recurrence_loops.recurrence_torch(*(t.double() for t in dev[:2]), chunk_size))
    ref_b = torch_path(lambda: recurrence_loops.recurrence_backward_torch(ref[1], ref[2], dev[1].double(),
                                                                          dev[2].double(), chunk_size))
    half = [t.to(dtype) for t in dev]
    plain = torch_path(lambda: recurrence_loops.recurrence_torch(*half[:2], chunk_size))
    plain_b = torch_path(lambda: recurrence_loops.recurrence_backward_torch(plain[1], plain[2], half[1], half[2],
                                                                            chunk_size))
    fused = fwd(*half[:2], *extra)
    fused_b = bwd(fused[1], fused[2], half[1], half[2], *extra)
    torch.cuda.synchronize()
    for name, got, base, want in zip(["H", "Z", "C", "H_prev", "dxg", "dZ_later"], [*fused, *fused_b],
                                     [*plain, *plain_b], [*ref, *ref_b]):
        assert got.shape == want.shape and got.dtype == dtype, name
        assert torch.isfinite(got).all(), name
        if got.numel():
            e, e_plain = error(got, want), error(base, want)
            assert e <= max(FLOOR[dtype], 3 * e_plain), f"{name}: {e:.2e} (torch step loop {e_plain:.2e})"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("D,Gr,B,P", SIZES)
def test_the_recurrence_through_its_path_at_the_model_widths(D, Gr, B, P, dtype):
    """What the model runs (the autograd Function through the selection, W a float32 parameter
    cast as under autocast): outputs and the gradients of xg and W against float64."""
    xg, w, d_out = make(Gr, B, P, D, 2)

    def run(dt, device):
        x = xg.to(device, dt).requires_grad_()
        v = w.to(device, torch.float32 if dt != torch.float64 else dt).requires_grad_()
        out = recurrence(x, v, 2)
        return (out, *torch.autograd.grad(out, [x, v], d_out.to(device, dt)))

    ref = torch_path(lambda: run(torch.float64, "cuda"))
    plain = torch_path(lambda: run(dtype, "cuda"))
    got = run(dtype, "cuda")
    for name, a, b, r in zip(["H", "dxg", "dW"], got, plain, ref):
        assert torch.isfinite(a).all(), name
        e, e_plain = error(a, r), error(b, r)
        assert e <= max(FLOOR[dtype], 3 * e_plain), f"{name}: {e:.2e} (torch step loop {e_plain:.2e})"


def test_each_width_takes_the_path_the_selection_promises():
    """On this GPU: the loop kernel at the base and big widths, the per-step cells past
    LOOP_MAX_D, the torch cells for float64 (docs/gpu.md's table)."""
    recurrence_path.reset()
    for D in (128, 256, 1024):
        xg, w, _ = make(1, 17, 5, D, 2)
        recurrence(xg.cuda().half().requires_grad_(), w.cuda().requires_grad_(), 2).sum().backward()
    taken = recurrence_path.paths_taken()
    for D in (128, 256):
        for direction in ("forward", "backward"):
            assert taken[(f"onlstm {direction}", "cuda:0", torch.float16, D)] == "the persistent Triton loop kernel"
    assert taken[("onlstm forward", "cuda:0", torch.float16, 1024)] == "the step loop"


@pytest.mark.parametrize("limit,loop_max_d", [(64 * 1024, None), (24 * 1024, 4096)], ids=["64KiB", "24KiB"])
def test_a_device_of_little_shared_memory_trains_the_big_model_with_one_granularity(limit, loop_max_d, monkeypatch,
                                                                                     caplog):
    """The big model's MG-SA layer with one phrase granularity (8 heads of 64: D = 512) on a
    device that allows `limit` bytes of shared memory a block (64 KiB: a T4's), with the default
    selection, and with the loop kernel allowed at every width so that the limit decides: no
    error, no warning, the loop kernel exactly where its compiled need fits the limit, the
    step loop elsewhere, and the gradients of the torch path within rounding."""
    import logging

    from fairseq_mgsa.modules import MultiGranularitySelfAttention, ngram_partition

    recurrence_path.reset()
    if loop_max_d:
        monkeypatch.setattr(recurrence_path, "LOOP_MAX_D", loop_max_d)
    monkeypatch.setattr(recurrence_path, "device_shared_memory", lambda device: limit)
    k = loop_module()
    monkeypatch.setattr(k, "_NEED", {})
    torch.manual_seed(0)
    attn = MultiGranularitySelfAttention(1024, 16, ["word", "ngram2"], interaction="onlstm").cuda()
    T, B = 29, 6
    mask = torch.zeros(B, T, dtype=torch.bool, device="cuda")
    mask[1, :7] = True  # a left-padded sentence
    parts = {g: ngram_partition(mask, g.size) for g in attn.phrase_granularities}
    x = torch.randn(T, B, 1024, device="cuda")

    def grads():
        attn.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            out, _ = attn(x, key_padding_mask=mask, partitions=parts)
        out.float().pow(2).mean().backward()
        return [p.grad.clone() for p in attn.parameters() if p.grad is not None]

    with caplog.at_level(logging.INFO, logger="fairseq_mgsa.ops.recurrence_path"):
        got = grads()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    taken = recurrence_path.paths_taken()
    for direction, kernel in (("forward", "_onlstm_loop_fwd"), ("backward", "_onlstm_loop_bwd")):
        path = taken[(f"onlstm {direction}", "cuda:0", torch.float16, 512)]
        needs = [need for key, need in k._NEED.items() if key[0] == kernel]
        if not loop_max_d:
            assert path == "the step loop" and not needs  # D = 512 > LOOP_MAX_D: not even compiled
        else:
            assert len(needs) == 1 and (path == "the persistent Triton loop kernel") == (needs[0] <= limit), \
                (direction, path, needs, limit)
    want = torch_path(grads)
    for a, b in zip(got, want):
        assert torch.isfinite(a).all()
        assert error(a, b) <= 2e-2


def test_the_loop_kernels_are_deterministic():
    torch.use_deterministic_algorithms(True)
    try:
        xg, w, d_out = make(3, 37, 50, 128, 2)
        xg, w, d_out = xg.cuda().half(), w.cuda(), d_out.cuda().half()
        results = []
        for _ in range(2):
            x, v = xg.clone().requires_grad_(), w.clone().requires_grad_()
            out = recurrence(x, v, 2)
            results.append((out, *torch.autograd.grad(out, [x, v], d_out)))
        for a, b in zip(*results):
            assert torch.equal(a, b)
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices (the launch's device guard)")
def test_tensors_on_a_second_device_while_the_first_is_current():
    xg, w, d_out = make(3, 17, 9, 128, 2)
    ref = torch_path(lambda: recurrence(xg.double(), w.double(), 2))
    torch.cuda.set_device(0)
    x, v = xg.to("cuda:1").requires_grad_(), w.to("cuda:1").requires_grad_()
    out = recurrence(x, v, 2)
    out.backward(d_out.to("cuda:1"))
    assert error(out, ref) <= FLOOR[torch.float32]
    assert torch.isfinite(x.grad).all() and torch.isfinite(v.grad).all()
