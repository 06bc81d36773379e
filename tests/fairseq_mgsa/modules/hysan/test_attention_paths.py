"""HySAN's hybrid self-attention on its computing paths: the operators it dispatches (one score
matrix or one fused attention for all branches), outputs and gradients of the fused, recomputed
and explicit paths against the computation before the gates were stacked, what training keeps
for the backward pass, no host syncs, and old checkpoints' gates. The batches and the plain
reference are test_attention.py's."""

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_mgsa.modules.hysan.attention import HybridMultiheadAttention, parse_branches

from .test_attention import DIM, HEADS, T, LENGTHS, causal_mask, module_for, padded_batch, reference, run, sentences


def dispatched_ops(fn):
    """Names of the aten operators fn() dispatches (below autograd)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))
    names = []
    with Record():
        fn()
    return names


def test_one_score_matrix_or_one_fused_attention_for_all_branches():
    """Asked for weights (or decoding incrementally), Q K^T is computed once: the batched matrix
    products are that one and one P V per branch (counted by torch's FlopCounterMode).
    Otherwise all branches are one call of torch's fused attention, with no softmax or batched
    product of their own. Q, K, V, W_O are four projections whatever l is."""
    from torch.utils.flop_counter import FlopCounterMode

    names = "global,forward,backward,local1,local2"
    module = module_for(names)
    x, pad = padded_batch(sentences(), "left", pad_value=0.0)
    batch, d_k, branches = len(LENGTHS), DIM // HEADS, len(names.split(","))
    one_product = 2 * batch * HEADS * T * T * d_k  # [T x d_k] @ [d_k x T] per head, or P @ V
    projections = 4 * 2 * T * batch * DIM * DIM  # q, k, v, out projections (add fusion)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        module(x, x, x, key_padding_mask=pad, need_weights=True)
    flops = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    assert flops["aten.bmm"] == (1 + branches) * one_product
    assert flops["aten.addmm"] == projections
    with torch.no_grad():
        ops = dispatched_ops(lambda: run(module, x, pad, False))
    fused = [op for op in ops if "scaled_dot_product" in op]
    assert len(fused) == 1, ops
    assert not {"bmm", "_softmax", "softmax"} & set(ops), ops
    assert ops.count("addmm") == 4


def previous_fusion(fusion, outputs):
    """The fusion as it was before its gates were stacked: a loop over the branches, one
    squeeze gate (two Linear layers) per branch."""
    if fusion.kind == "add":
        return sum(outputs[1:], outputs[0])
    if fusion.kind == "concat":
        return fusion.reduce(torch.cat(outputs, dim=-1))
    fused = 0
    for i, o in enumerate(outputs):
        g = i % fusion.num_gates
        hidden = torch.relu(torch.nn.functional.linear(o, fusion.f1_weight[g], fusion.f1_bias[g]))
        fused = fused + torch.sigmoid(torch.nn.functional.linear(hidden, fusion.f2_weight[g], fusion.f2_bias[g])) * o
    return fused


def previous_forward(module, x, pad, attn_mask):
    """The module's computation before the branches shared one softmax, one fused attention
    call and one batched gate (kept here, plainly, as the reference): one softmax, one P V,
    one output and one squeeze gate per branch, on fairseq's scores E."""
    from fairseq_mgsa.modules.hysan.attention import allowed_keys, blocked_value

    T_, B = x.size(0), x.size(1)
    if attn_mask is not None:
        attn_mask = attn_mask.clamp(min=blocked_value(attn_mask.dtype))
    logits, v = MultiheadAttention.forward(module, x, x, x, key_padding_mask=pad, need_weights=False,
                                           attn_mask=attn_mask, before_softmax=True)
    S = logits.size(-1)
    outputs = []
    for branch in module.branches:
        allowed = allowed_keys(branch, T_, S, module.causal, module.exclude_self)
        scores = logits
        if allowed is not None:
            scores = logits + torch.zeros(T_, S).masked_fill(~allowed, blocked_value(logits.dtype))
        o = torch.bmm(torch.softmax(scores, dim=-1), v)  # B*H x T x d_k
        if module.exclude_self and branch.kind in ("forward", "backward"):
            has_key = (allowed.unsqueeze(0) & ~pad.unsqueeze(1)).any(-1).float()  # B x T
            o = (o.view(B, HEADS, T_, DIM // HEADS) * has_key[:, None, :, None]).view_as(o)
        outputs.append(o.view(B, HEADS, T_, DIM // HEADS).permute(2, 0, 1, 3).reshape(T_, B, DIM))
    return module.out_proj(previous_fusion(module.fusion, outputs))


@pytest.mark.parametrize("path", ["fused", "fused_recomputed", "explicit"])
@pytest.mark.parametrize("names,causal,exclude_self,fusion,shared", [
    ("global,forward,backward,local2", False, False, "gate", False),
    ("global,forward,backward,local1", False, True, "gate", False),
    ("global,forward,backward,local2", False, False, "gate", True),
    ("forward,local2", False, False, "concat", False),
    ("global,local2", True, False, "gate", False),
    ("global,local1", True, False, "add", False)])
def test_outputs_and_gradients_equal_the_previous_computation(names, causal, exclude_self, fusion, shared, path):
    """The fused path (training, full forwards), with and without recomputation, and the explicit
    one (incremental decoding, attention weights) against the plain per-branch computation."""
    module = module_for(names, causal=causal, fusion=fusion, exclude_self=exclude_self,
                        gate_shared=shared).train()  # dropout 0
    module.recompute = path == "fused_recomputed"
    with torch.no_grad():
        for p in module.fusion.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x, pad = padded_batch(sentences(), "left" if not causal else "right", pad_value=0.5)
    attn_mask = causal_mask(T) if causal else None

    def current(x_):
        return module(x_, x_, x_, key_padding_mask=pad, attn_mask=attn_mask, need_weights=path == "explicit")[0]
    # the loss reaches the real positions only, as in the model (padded positions are masked as
    # keys and left out of the loss): a padding query whose allowed keys are all padding takes
    # a softmax over scores near -1e8, where float32's spacing is 8, a row that has no gradient
    # worth comparing (the fused kernel recomputes its probabilities in the backward pass)
    real = (~pad).T[:, :, None]  # T x B x 1
    results = []
    for forward in (current, lambda x_: previous_forward(module, x_, pad, attn_mask)):
        x_ = x.clone().requires_grad_()
        out = forward(x_)
        module.zero_grad()
        (out * torch.linspace(-1, 1, out.numel()).view_as(out) * real).sum().backward()
        results.append((out.detach(), x_.grad, {n: p.grad.clone() for n, p in module.named_parameters()}))
    (out, gx, grads), (ref_out, ref_gx, ref_grads) = results
    torch.testing.assert_close(out, ref_out, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(gx, ref_gx, atol=1e-6, rtol=1e-5)
    assert grads.keys() == ref_grads.keys()
    for n in grads:
        torch.testing.assert_close(grads[n], ref_grads[n], atol=1e-6, rtol=1e-5, msg=n)


def saved_bytes(fn):
    """Bytes of the distinct tensors autograd keeps for the backward pass of fn()."""
    kept = {}

    def pack(t):
        kept[(t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))] = t.numel() * t.element_size()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return sum(kept.values()), out


@pytest.mark.parametrize("recompute", [False, True])
def test_what_training_keeps_for_the_backward_pass(recompute):
    """Four branches with squeeze gates keep what one fairseq MultiheadAttention keeps (whose
    fused attention kernel keeps no T x S map either) plus the stacked mask (B x l*T x S, one
    per stack in the model) and, unless recomputed in the backward pass, per branch: its query
    rows, its output in the kernel's layout and in the gate's, its gate values (4 T x B x C),
    the gate's hidden units and the kernel's log-sum-exp."""
    dim, heads, t, b, r, branches = 64, 4, 24, 3, 8, 4
    torch.manual_seed(0)
    hybrid = HybridMultiheadAttention(dim, heads, parse_branches("global,forward,backward,local2", False, "--x"),
                                      fusion="gate", gate_reduction=r).train()
    hybrid.recompute = recompute
    mha = MultiheadAttention(dim, heads, self_attention=True).train()
    x = torch.randn(t, b, dim, requires_grad=True)
    pad = torch.zeros(b, t, dtype=torch.bool)
    pad[1, :5] = True
    hybrid_bytes, out = saved_bytes(lambda: hybrid(x, x, x, key_padding_mask=pad, need_weights=False)[0])
    mha_bytes, _ = saved_bytes(lambda: mha(x, x, x, key_padding_mask=pad, need_weights=False)[0])
    masks = b * branches * t * t * 4  # float32 bytes
    per_branch = branches * (4 * t * b * dim + t * b * (dim // r) + b * heads * t) * 4
    assert hybrid_bytes <= mha_bytes + masks + (0 if recompute else per_branch), (hybrid_bytes, mha_bytes)
    if not recompute:  # what the recomputation saves
        assert hybrid_bytes > mha_bytes + masks + per_branch / 2, (hybrid_bytes, mha_bytes)
    out.sum().backward()  # and the backward pass (recomputing, or not) gets its gradients
    assert x.grad is not None and torch.isfinite(x.grad).all()


def sync_ops(ops):
    """The operators among ops that make the host wait for the device."""
    return [op for op in ops if op in ("_local_scalar_dense", "item", "is_nonzero", "nonzero", "masked_select")]


@pytest.mark.parametrize("names,causal,exclude_self", [
    ("global,forward,backward,local2", False, False),
    ("global,forward,backward,local1", False, True),
    ("global,local2", True, False)])
def test_no_operator_waits_for_the_device(names, causal, exclude_self):
    """Training (forward and backward), a forward with weights and an incremental decoding step:
    no decision on a tensor's values, so no operator that synchronises with the host."""
    module = module_for(names, causal=causal, fusion="gate", exclude_self=exclude_self).train()
    x, pad = padded_batch(sentences(), "right" if causal else "left", pad_value=0.5)
    x.requires_grad_()
    attn_mask = causal_mask(T) if causal else None

    def train():
        module(x, x, x, key_padding_mask=pad, attn_mask=attn_mask, need_weights=False)[0].sum().backward()
    assert sync_ops(dispatched_ops(train)) == []
    with torch.no_grad():
        assert sync_ops(dispatched_ops(lambda: module(x, x, x, key_padding_mask=pad, attn_mask=attn_mask))) == []
        if causal:
            state = {}
            for t in range(3):
                step = lambda: module(x[t:t + 1], x[t:t + 1], x[t:t + 1], key_padding_mask=pad[:, t:t + 1],
                                      incremental_state=state, need_weights=False)
                assert sync_ops(dispatched_ops(step)) == []


@pytest.mark.parametrize("shared", [False, True])
def test_checkpoints_of_one_gate_module_per_branch_load_into_the_stacked_gates(shared):
    """The earlier layout (gates.<i>.f1.weight, ...: one SqueezeGate per branch) loads into the
    stacked weights, and the fusion computes with them what the separate gates did."""
    from fairseq_mgsa.modules.hysan.branch_fusion import BranchFusion, SqueezeGate

    torch.manual_seed(3)
    gates = torch.nn.ModuleList([SqueezeGate(DIM, 4) for _ in range(1 if shared else 3)])
    old = {f"fusion.{k}": v for k, v in torch.nn.Module.state_dict(torch.nn.ModuleDict({"gates": gates})).items()}
    holder = torch.nn.Module()
    holder.fusion = BranchFusion("gate", 3, DIM, gate_reduction=4, gate_shared=shared)
    holder.load_state_dict(old)  # strict: every old key used, every new one filled
    outputs = torch.randn(3, T, 2, DIM)
    expected = sum(gates[i % len(gates)](o) * o for i, o in enumerate(outputs))
    torch.testing.assert_close(holder.fusion(outputs), expected, atol=1e-6, rtol=1e-5)
    with pytest.raises(RuntimeError, match="Missing key"):  # the old layout with a gate too few
        holder.load_state_dict({k: v for k, v in old.items() if not k.startswith("fusion.gates.0.f2")})
