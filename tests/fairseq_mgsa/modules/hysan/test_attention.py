"""HySAN's hybrid self-attention module against plain reference code: the masks as per-pair
rules, padding on either side, fairseq's MultiheadAttention, the fusions by hand."""

import math

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_mgsa import MGSAError
from fairseq_mgsa.modules.hysan.attention import Branch, HybridMultiheadAttention, parse_branches

DIM, HEADS, T = 8, 2, 6
LENGTHS = [6, 4, 2, 1]  # sentences of one batch, padded to T

# Which keys j a query i may see, in positions of the sentence itself (0 = its first word).
ENCODER_RULES = {
    "global": lambda i, j: True,
    "forward": lambda i, j: j <= i,
    "backward": lambda i, j: j >= i,
    "local1": lambda i, j: abs(i - j) <= 1,
    "local2": lambda i, j: abs(i - j) <= 2,
}
STRICT_RULES = {"forward": lambda i, j: j < i, "backward": lambda i, j: j > i}
DECODER_RULES = {
    "global": lambda i, j: j <= i,
    "local1": lambda i, j: i - 1 <= j <= i,
    "local2": lambda i, j: i - 2 <= j <= i,
}


def causal_mask(n):
    # as fairseq's decoder builds it (buffered_future_mask): -inf above the diagonal
    return torch.triu(torch.full((n, n), float("-inf")), 1)


def padded_batch(sentences, side, pad_value):
    """sentences: list of n x C -> T x B x C with `pad_value` rows at padding, and B x T padding mask."""
    x = torch.full((T, len(sentences), DIM), pad_value)
    pad = torch.ones(len(sentences), T, dtype=torch.bool)
    for b, s in enumerate(sentences):
        n = s.size(0)
        where = slice(T - n, T) if side == "left" else slice(0, n)
        x[where, b] = s
        pad[b, where] = False
    return x, pad


def real_rows(out, side, n):
    return out[T - n:] if side == "left" else out[:n]


def reference(module, x, rule):
    """One sentence (n x C), written plainly: for every head and query, softmax over the
    allowed keys of q.k / sqrt(d_k), times the values; a query with no allowed key gets 0."""
    n = x.size(0)
    q, k, v = module.q_proj(x), module.k_proj(x), module.v_proj(x)
    d = DIM // HEADS
    heads = []
    for h in range(HEADS):
        cols = slice(h * d, (h + 1) * d)
        rows = []
        for i in range(n):
            keys = [j for j in range(n) if rule(i, j)]
            if not keys:
                rows.append(torch.zeros(d))
                continue
            scores = torch.stack([q[i, cols] @ k[j, cols] / math.sqrt(d) for j in keys])
            p = torch.softmax(scores, dim=0)
            rows.append(sum(p[m] * v[j, cols] for m, j in enumerate(keys)))
        heads.append(torch.stack(rows))
    return torch.cat(heads, dim=-1)  # n x C: the branch output O before W_O


def module_for(names, causal=False, fusion="add", exclude_self=False, **kw):
    torch.manual_seed(0)
    branches = parse_branches(names, causal, "--test")
    return HybridMultiheadAttention(DIM, HEADS, branches, fusion=fusion, causal=causal, exclude_self=exclude_self,
                                    gate_reduction=4, **kw).eval()


def run(module, x, pad, causal):
    attn_mask = causal_mask(T) if causal else None
    out, _ = module(x, x, x, key_padding_mask=pad, attn_mask=attn_mask, need_weights=False)
    return out


def sentences(seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, DIM, generator=g) for n in LENGTHS]


@pytest.mark.parametrize("causal,name,exclude_self", [
    *[(False, name, False) for name in ENCODER_RULES],
    (False, "forward", True), (False, "backward", True),
    *[(True, name, False) for name in DECODER_RULES]])
@pytest.mark.parametrize("side", ["left", "right"])
def test_every_mask_is_its_per_pair_rule_under_either_padding(causal, name, exclude_self, side):
    rule = (STRICT_RULES if exclude_self else DECODER_RULES if causal else ENCODER_RULES)[name]
    module = module_for(name, causal=causal, exclude_self=exclude_self)
    sents = sentences()
    x, pad = padded_batch(sents, side, pad_value=7.0)  # padding rows hold junk
    with torch.no_grad():
        out = run(module, x, pad, causal)
        assert torch.isfinite(out).all()  # padding rows included: no all-masked row became NaN
        for b, s in enumerate(sents):
            expected = module.out_proj(reference(module, s, rule))
            torch.testing.assert_close(real_rows(out[:, b], side, s.size(0)), expected, atol=1e-5, rtol=1e-5)


def test_global_only_equals_fairseq_multihead_attention_encoder_and_decoder():
    hybrid = module_for("global")
    torch.manual_seed(5)
    mha = MultiheadAttention(DIM, HEADS, self_attention=True).eval()
    hybrid.load_state_dict(mha.state_dict())  # same weights, nothing else to load (add fusion)
    x, pad = padded_batch(sentences(), "left", pad_value=0.0)
    with torch.no_grad():
        enc, enc_ref = hybrid(x, x, x, key_padding_mask=pad)[0], mha(x, x, x, key_padding_mask=pad)[0]
        # decoder: right-padded targets and fairseq's causal mask
        y, ypad = padded_batch(sentences(2), "right", pad_value=0.0)
        dec = hybrid(y, y, y, key_padding_mask=ypad, attn_mask=causal_mask(T))[0]
        dec_ref = mha(y, y, y, key_padding_mask=ypad, attn_mask=causal_mask(T))[0]
    for b, n in enumerate(LENGTHS):
        torch.testing.assert_close(enc[T - n:, b], enc_ref[T - n:, b], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(dec, dec_ref, atol=1e-6, rtol=1e-5)
    # and the attention weights it returns are the global branch's, as fairseq's
    with torch.no_grad():
        w, w_ref = hybrid(x, x, x, key_padding_mask=pad)[1], mha(x, x, x, key_padding_mask=pad)[1]
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=1e-5)


def test_local_window_wider_than_the_sentence_is_global():
    sents = sentences()
    x, pad = padded_batch(sents, "left", pad_value=3.0)
    with torch.no_grad():
        outs = [run(module_for(name), x, pad, False) for name in ("global", "local9")]
    for b, n in enumerate(LENGTHS):
        torch.testing.assert_close(outs[0][T - n:, b], outs[1][T - n:, b])


def branch_outputs(module, x, pad, causal):
    """The fusion's inputs O_1..O_l (T x B x C each) and the module's output."""
    seen = []
    hook = module.fusion.register_forward_hook(lambda mod, args, out: seen.append([o.clone() for o in args[0]]))
    out = run(module, x, pad, causal)
    hook.remove()
    return seen[0], out


@pytest.mark.parametrize("fusion,shared", [("add", False), ("concat", False), ("gate", False), ("gate", True)])
@pytest.mark.parametrize("causal", [False, True])
def test_each_fusion_is_its_formula_by_hand(fusion, shared, causal):
    names = "global,local1" if causal else "global,forward,backward,local2"
    module = module_for(names, causal=causal, fusion=fusion, gate_shared=shared)
    rules = DECODER_RULES if causal else ENCODER_RULES
    # give the gates' and H's biases values, so that a missing term would show
    with torch.no_grad():
        for p in module.fusion.parameters():
            p.add_(0.1 * torch.randn_like(p))
    sents = sentences()
    x, pad = padded_batch(sents, "right", pad_value=0.0)
    with torch.no_grad():
        outs, out = branch_outputs(module, x, pad, causal)
        # the branch outputs are the masked branches of the shared score matrix
        for branch, o in zip(names.split(","), outs):
            for b, s in enumerate(sents):
                torch.testing.assert_close(o[:s.size(0), b], reference(module, s, rules[branch]), atol=1e-5, rtol=1e-5)
        f = module.fusion
        if fusion == "add":
            fused = outs[0]
            for o in outs[1:]:
                fused = fused + o
        elif fusion == "concat":  # H([O_1; ...; O_l])
            fused = torch.cat(outs, dim=-1) @ f.reduce.weight.T + f.reduce.bias
        else:  # sum_i SG_i(O_i) * O_i, SG(x) = sigmoid(f2(relu(f1(x)))), gate i of the stacked weights
            fused = 0
            for i, o in enumerate(outs):
                g = 0 if shared else i
                sg = torch.sigmoid(torch.relu(o @ f.f1_weight[g].T + f.f1_bias[g]) @ f.f2_weight[g].T + f.f2_bias[g])
                fused = fused + sg * o
        expected = fused @ module.out_proj.weight.T + module.out_proj.bias
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    if fusion == "gate":
        assert f.num_gates == (1 if shared else len(outs))


def test_branch_lists_are_checked():
    assert parse_branches("global,fw,bw,local1,local2,local5", False, "--x") == [
        Branch("global"), Branch("forward"), Branch("backward"), Branch("local", 1), Branch("local", 2),
        Branch("local", 5)]
    assert parse_branches("global,local2", True, "--x") == [Branch("global"), Branch("local", 2)]
    for spec, decoder, message in [
        ("global,forward", True, "directional branch 'forward' is for the encoder only"),
        ("global,bw", True, "directional branch 'bw' is for the encoder only"),
        ("global,local0", False, "local branch 'local0' has radius 0, expected K >= 1"),
        ("global,window3", False, "unknown HySAN branch 'window3'"),
        ("global,local", False, "unknown HySAN branch 'local'"),
        ("global,,local2", False, "expected a comma-separated list of branches"),
        ("global,local2,local2", False, "branch 'local2' is listed twice"),
    ]:
        with pytest.raises(MGSAError, match=message):
            parse_branches(spec, decoder, "--x")


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
