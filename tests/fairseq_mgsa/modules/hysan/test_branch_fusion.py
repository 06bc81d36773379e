"""HySAN's gated sum with its hand-written backward (gated_sum, GatedSum: BranchFusion's
default) against the plain autograd computation beside it (gated_sum_ref, BranchFusion with
use_fast_path=False): outputs and gradients, in float64 and under bfloat16 autocast, and in
fewer operators."""

import pytest
import torch

from fairseq_mgsa.modules.hysan.branch_fusion import BranchFusion, GatedSum, gated_sum, gated_sum_ref

L, T, B, D = 4, 5, 3, 16


def fusion_and_outputs(dtype=torch.float64, seed=0):
    """{use_fast_path: the fusion built with it}, the two with the same weights, and inputs."""
    torch.manual_seed(seed)
    fusion = BranchFusion("gate", L, D, gate_reduction=4).to(dtype)
    with torch.no_grad():  # biases away from zero, so that every term of the gradient shows
        for p in fusion.parameters():
            p.uniform_(-1, 1)
    reference = BranchFusion("gate", L, D, gate_reduction=4, use_fast_path=False).to(dtype)
    reference.load_state_dict(fusion.state_dict())
    outputs = torch.randn(L, T, B, D, dtype=dtype, requires_grad=True)
    return {True: fusion, False: reference}, outputs


def run(fusions, outputs, fast, upstream):
    fusion = fusions[fast]
    fusion.zero_grad()
    outputs.grad = None
    y = fusion(outputs)
    (y * upstream).sum().backward()
    return y.detach(), outputs.grad.clone(), {n: p.grad.clone() for n, p in fusion.named_parameters()}


def test_the_fast_gate_equals_the_reference_forward_and_backward():
    fusions, outputs = fusion_and_outputs()
    upstream = torch.randn(T, B, D, dtype=torch.float64)
    y_ref, dx_ref, dp_ref = run(fusions, outputs, False, upstream)
    y, dx, dp = run(fusions, outputs, True, upstream)
    assert torch.equal(y, y_ref)  # the same operators forward
    torch.testing.assert_close(dx, dx_ref, rtol=1e-12, atol=1e-12)
    for name in dp_ref:
        torch.testing.assert_close(dp[name], dp_ref[name], rtol=1e-12, atol=1e-12)
        assert dp[name].stride() == fusions[True].get_parameter(name).stride()  # in the weight's own layout


def test_gated_sum_passes_gradcheck():
    fusions, outputs = fusion_and_outputs()
    fusion = fusions[True]
    x = outputs.detach().reshape(L, T * B, D).requires_grad_()
    params = [p.detach().clone().requires_grad_() for p in
              (fusion.f1_weight, fusion.f1_bias, fusion.f2_weight, fusion.f2_bias)]
    assert torch.autograd.gradcheck(GatedSum.apply, (x, *params))


@pytest.mark.parametrize("gates", [1, L])
def test_gated_sum_ref_is_the_gated_sum(gates):
    """The reference function, written out here once more: per-branch gates (gated_sum's case)
    and one gate shared by every branch."""
    torch.manual_seed(5)
    x = torch.randn(L, 7, D, dtype=torch.float64)
    w1, b1 = torch.randn(gates, 3, D, dtype=torch.float64), torch.randn(gates, 3, dtype=torch.float64)
    w2, b2 = torch.randn(gates, D, 3, dtype=torch.float64), torch.randn(gates, D, dtype=torch.float64)
    want = sum(torch.sigmoid(torch.relu(x[i] @ w1[i % gates].T + b1[i % gates]) @ w2[i % gates].T + b2[i % gates])
               * x[i] for i in range(L))
    torch.testing.assert_close(gated_sum_ref(x, w1, b1, w2, b2), want, rtol=1e-12, atol=1e-12)
    if gates > 1:
        torch.testing.assert_close(gated_sum(x, w1, b1, w2, b2), want, rtol=1e-12, atol=1e-12)


def test_fast_is_use_fast_path():
    """`fast`, the attribute scripts set after construction, is the constructor's use_fast_path."""
    fusion = BranchFusion("gate", L, D, gate_reduction=4, use_fast_path=False)
    assert fusion.fast is False
    fusion.fast = True
    assert fusion.use_fast_path is True and "fast" not in fusion.state_dict()


def test_the_fast_gate_under_bfloat16_autocast_matches_the_reference():
    fusions, outputs = fusion_and_outputs(torch.float32)
    upstream = torch.randn(T, B, D)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y_ref, dx_ref, dp_ref = run(fusions, outputs, False, upstream)
        y, dx, dp = run(fusions, outputs, True, upstream)
    assert y.dtype == y_ref.dtype and torch.equal(y, y_ref)
    assert dx.dtype == dx_ref.dtype
    torch.testing.assert_close(dx, dx_ref, rtol=2e-2, atol=2e-2)
    for name in dp_ref:
        assert dp[name].dtype == torch.float32
        torch.testing.assert_close(dp[name], dp_ref[name], rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("fast", [False, True])
def test_operator_count(fast):
    """The hand-written backward launches fewer operators than autograd's (op_counts.py counts)."""
    from benchmarks.op_counts import count

    fusions, outputs = fusion_and_outputs(torch.float32)
    fusion = fusions[fast]

    def step():
        fusion.zero_grad()  # as the trainer does, the gradients set to None
        outputs.grad = None
        fusion(outputs).sum().backward()

    step()
    _, ops = count(step)
    # forward: 2 baddbmm, relu, sigmoid, mul, sum; the loss: a sum, its gradient (ones_like);
    # backward: autograd's 11 operators and 2 copies of the weights' transposed gradients into
    # their layout, or the hand-written 10
    assert ops["kernel_ops"] == (6 + 2 + 10 if fast else 6 + 2 + 11 + 2), ops["by_op"]
