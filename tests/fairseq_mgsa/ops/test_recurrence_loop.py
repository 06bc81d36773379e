"""The whole-loop Triton kernels (ops/triton/recurrence_loop.py) against the torch step loop
(ops/recurrence.py), operator by operator and through the recurrence's autograd
Function (gradients of xg and W). On a GPU for real; on the CPU through Triton's interpreter
(TRITON_INTERPRET=1, Triton on PYTHONPATH), with tiny sizes: it runs a program at a time in
numpy. They skip where Triton is absent (the default suite on a CPU build of torch)."""

import pytest
import torch

from fairseq_mgsa.ops import recurrence as step_loop, recurrence_path
from fairseq_mgsa.ops.recurrence import recurrence
from tests.fairseq_mgsa.ops.test_recurrence import DEVICES, triton_or_skip

# (Gr, B, P, D): one step (no product with W), a granularity alone, D = 48; several steps,
# three granularities, B past one block of rows (BLOCK_B = 16), D = 40 (not a power of two)
# ending in part of a block of the forward's contraction (16), K in part of the backward's (32)
SIZES = [(1, 5, 1, 48), (3, 17, 4, 40)]
# both compute in float32 and round where the step loop stores (the states, z, the products);
# half types then differ where a value falls near a rounding boundary, by a unit in the last place
TOL = {torch.float32: dict(atol=2e-6, rtol=2e-5), torch.float16: dict(atol=2e-3, rtol=2e-3),
       torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2)}


def loop_kernels(device):
    triton_or_skip(device)
    from fairseq_mgsa.ops.triton import recurrence_loop
    return recurrence_loop


def inputs(Gr, B, P, D, chunk_size, dtype, device):
    K = 4 * D + (2 * (D // chunk_size) if chunk_size else 0)
    xg = torch.randn(Gr, B, P + 1, K, device=device)[:, :, 1:]  # strided, as the layer's view may be
    w = torch.randn(Gr, K, D, device=device) / D ** 0.5
    d_out = torch.randn(Gr, B, P, D + 3, device=device)[..., 1:-2]  # a gradient need not be contiguous
    return xg.to(dtype), w.to(dtype), d_out.to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("Gr,B,P,D", SIZES)
@pytest.mark.parametrize("chunk_size", [0, 2, 4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_loop_kernels_equal_the_step_loop(device, Gr, B, P, D, chunk_size, dtype):
    kernels = loop_kernels(device)
    torch.manual_seed(5)
    xg, w, d_out = inputs(Gr, B, P, D, chunk_size, dtype, device)
    if chunk_size:
        got = kernels.onlstm_recurrence(xg, w, chunk_size)
    else:
        got = kernels.lstm_recurrence(xg, w)
    want = step_loop.recurrence_torch(xg, w, chunk_size)
    for name, a, b in zip(["H", "Z", "C", "H_prev"], got, want):
        assert a.shape == b.shape and a.dtype == dtype, name
        torch.testing.assert_close(a, b, **TOL[dtype], msg=name)
    _, z, c, _ = want  # the backward from the same saved states
    if chunk_size:
        got = kernels.onlstm_recurrence_backward(z, c, w, d_out, chunk_size)
    else:
        got = kernels.lstm_recurrence_backward(z, c, w, d_out)
    want = step_loop.recurrence_backward_torch(z, c, w, d_out, chunk_size)
    for name, a, b in zip(["dxg", "dZ_later"], got, want):
        assert a.shape == b.shape and a.dtype == dtype, name
        torch.testing.assert_close(a, b, **TOL[dtype], msg=name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("chunk_size", [0, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_recurrence_through_the_loop_kernels_equals_the_step_loop(device, chunk_size, dtype, monkeypatch):
    """Outputs and the gradients of xg and W, the kernels against the torch step loop (W kept
    in float32 as a parameter is, cast to the states' dtype as under autocast)."""
    loop_kernels(device)
    monkeypatch.setattr(recurrence_path, "TRITON_ON_CPU", True)
    torch.manual_seed(6)
    xg, w, d_out = inputs(3, 17, 4, 40, chunk_size, dtype, device)
    w = w.float()
    results = []
    for no_triton in ("0", "1"):
        monkeypatch.setenv("MGSA_NO_TRITON", no_triton)
        assert (recurrence_path.loop_kernels(xg) is None) == (no_triton == "1")
        x, v = xg.detach().requires_grad_(), w.detach().requires_grad_()
        out = recurrence(x, v, chunk_size)
        results.append((out, *torch.autograd.grad(out, [x, v], d_out)))
    for name, a, b in zip(["H", "dxg", "dW"], *results):
        assert a.dtype == b.dtype, name
        tol = TOL[dtype] if name != "dW" else dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else \
            dict(atol=5e-2, rtol=2e-2)  # a sum over every step and sentence of half-type products
        torch.testing.assert_close(a, b, **tol, msg=name)


@pytest.mark.parametrize("dtype,D", [("fp32", 40), ("fp32", 128), ("fp16", 128), ("bf16", 256)])
def test_loop_kernels_compile_for_a_hopper_gpu(dtype, D):
    """What the interpreter cannot tell: that the GPU compiler takes the kernels (tl.dot's shapes,
    layouts, the loops), through Triton's own ptxas to a cubin for sm_90 (H100, H200), no GPU
    needed. Runs where Triton is, without TRITON_INTERPRET (which replaces the kernels)."""
    import os

    pytest.importorskip("triton")
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("TRITON_INTERPRET=1 replaces the kernels by the interpreter's")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernels = loop_kernels("cuda")
    block_d = max(16, triton.next_power_of_2(D))
    pointers = {"xg", "w", "out", "z", "c", "hp", "d_out", "d_xg", "d_later"}
    for kernel, block_k in ((kernels._lstm_loop_fwd, kernels.BLOCK_K_FORWARD),
                            (kernels._lstm_loop_bwd, kernels.BLOCK_K_BACKWARD),
                            (kernels._onlstm_loop_fwd, kernels.BLOCK_K_FORWARD),
                            (kernels._onlstm_loop_bwd, kernels.BLOCK_K_BACKWARD)):
        meta = dict(PREC="ieee" if dtype == "fp32" else "tf32", BLOCK_B=kernels.BLOCK_B, BLOCK_D=block_d,
                    BLOCK_K=block_k)
        if "CS" in kernel.arg_names:
            meta["CS"] = 2
        signature = {n: "constexpr" if n in meta else "*" + dtype if n in pointers else "i32" for n in kernel.arg_names}
        source = ASTSource(fn=kernel, signature=signature,
                           constexprs={(kernel.arg_names.index(n),): v for n, v in meta.items()})
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                                  options=dict(num_warps=4 if block_d <= 64 else 8, num_stages=1))
        assert compiled.asm["cubin"], kernel.fn.__name__
