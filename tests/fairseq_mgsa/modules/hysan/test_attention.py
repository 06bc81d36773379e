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
