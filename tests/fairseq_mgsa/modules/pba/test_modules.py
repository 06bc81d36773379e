"""Phrase-based attention (PhraseBasedAttention) against plain reference code:
fairseq's MultiheadAttention for unigram-only configurations, loops over n-gram windows
for CONVKV and QUERYK, a literal strided convolution over the interleaved sequence,
left = right padding, parameter counts = the formulas of docs/peers.md, and half / bfloat16 runs."""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention

from fairseq_mgsa import MGSAError
from fairseq_mgsa.modules.pba.attention import PhraseBasedAttention

D, H = 16, 4
DK = D // H
COMBOS = list(itertools.product(["convkv", "queryk"], ["homogeneous", "heterogeneous", "interleaved"]))
NGRAMS = {"homogeneous": [1, 2], "heterogeneous": [1, 2, 3], "interleaved": [1, 2]}


def make(attention, mode, role, ngrams=None, shared_key=False, d=D, heads=H, seed=0):
    torch.manual_seed(seed)
    m = PhraseBasedAttention(d, heads, attention=attention, mode=mode, ngrams=ngrams or NGRAMS[mode], role=role,
                             shared_key=shared_key)
    with torch.no_grad():  # non-zero biases everywhere, so that a bias misplaced would show
        for name, p in m.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    return m.eval()


def run(m, x_q, x_kv, pad_kv=None, pad_q=None, causal=False, need_head_weights=False):
    """Batch-first inputs, as fairseq's layers call it (time-first)."""
    mask = None
    if causal:
        T = x_q.size(1)
        mask = torch.triu(torch.full((T, T), float("-inf")), 1)
    m.query_padding_mask = pad_q
    out, w = m(x_q.transpose(0, 1), x_kv.transpose(0, 1), x_kv.transpose(0, 1), key_padding_mask=pad_kv,
               attn_mask=mask, need_head_weights=need_head_weights)
    m.query_padding_mask = None
    return out.transpose(0, 1), w


# ---- reference: plain loops over sentences, heads, positions and windows -------------------

def conv_at(conv_weight, bias, xs, t, n):
    """Conv_n output for the window ending at t; xs: list of S vectors (zero for pads)."""
    out = bias.clone()
    for m in range(n):
        s = t - n + 1 + m
        if s >= 0:
            out = out + conv_weight[:, :, m] @ xs[s]
    return out


def reference(m, x_q, x_kv, real_q, real_kv, causal):
    """The module's output written as the paper's equations, one query and one key at a time."""
    B, T, _ = x_q.shape
    S = x_kv.size(1)
    homogeneous = m.mode == "homogeneous"
    head_n = [n for n, h in m.groups for _ in range(h)] if homogeneous else None
    sizes = m.ngrams

    def valid(b, j, n):
        if homogeneous:
            return bool(real_kv[b, j])
        return j - n + 1 >= 0 and all(bool(real_kv[b, s]) for s in range(j - n + 1, j + 1))

    def attend_one(b, i, h, qvec):
        """qvec(n) -> the query of head h for block n (CONVKV: d_k; QUERYK: n taps x d_k)."""
        xs = [x_kv[b, s] * real_kv[b, s] for s in range(S)]
        logits, values = [], []
        for n in ([head_n[h]] if homogeneous else sizes):
            local = h - sum(g for nn_, g in m.groups if nn_ < n) if homogeneous else h
            sl = slice(local * DK, (local + 1) * DK)
            for j in range(S):
                if not valid(b, j, n) or (causal and j > i):
                    continue
                if n == 1:
                    k, v = m.k_proj(x_kv[b, j])[sl], m.v_proj(x_kv[b, j])[sl]
                else:
                    v = conv_at(m.v_ngram[str(n)].weight, m.v_ngram[str(n)].bias, xs, j, n)[sl]
                if m.attention == "convkv" or n == 1:
                    if n > 1:
                        k = conv_at(m.k_ngram[str(n)].weight, m.k_ngram[str(n)].bias, xs, j, n)[sl]
                    logit = qvec(n) @ k / math.sqrt(DK * (n if m.attention == "queryk" else 1))
                else:
                    key_lin = m.k_proj if m.shared_key else m.k_ngram[str(n)]
                    taps = qvec(n)  # n x d_k
                    logit = 0.0
                    for tap in range(n):
                        s = j - n + 1 + tap
                        if s >= 0 and bool(real_kv[b, s]):
                            logit = logit + taps[tap] @ key_lin(x_kv[b, s])[sl]
                    logit = logit / math.sqrt(DK * n)
                logits.append(logit)
                values.append(v)
        p = torch.softmax(torch.stack(logits), 0)
        return sum(pi * vi for pi, vi in zip(p, values))

    def stream(bigram):
        out = torch.zeros(B, T, D)
        for b, i, h in itertools.product(range(B), range(T), range(H)):
            xq = [x_q[b, t] * real_q[b, t] for t in range(T)]

            def qvec(n, b=b, i=i, h=h, xq=xq):
                if homogeneous:
                    local = h - sum(g for nn_, g in m.groups if nn_ < n)
                else:
                    local = h
                if m.attention == "convkv" or n == 1:
                    if bigram:
                        q = conv_at(m.q2_proj.weight, m.q2_proj.bias, xq, i, 2)
                    else:
                        q = m.q_proj(x_q[b, i])
                    if m.attention == "convkv" and homogeneous:
                        return q[h * DK:(h + 1) * DK]
                    return q[local * DK:(local + 1) * DK]
                if bigram:
                    kern = conv_at(m.q2_kernel.weight, m.q2_kernel.bias, xq, i, 2)
                else:
                    kern = m.q_kernel[str(n)](x_q[b, i])
                return kern.view(-1, n, DK)[local]  # outputs ordered (head, tap, d_k)
            out[b, i, h * DK:(h + 1) * DK] = attend_one(b, i, h, qvec)
        return out

    u = stream(False)
    if m.mode != "interleaved":
        return m.out_proj(u)
    b = stream(True)
    return u, b


def literal_interleaved(m, u, b, real_q):
    """Eqs. 13-17 as written: build (0, u_1, b_1, u_2, ..., b_{N-1}, u_N[, 0]) and convolve, stride 2."""
    B, T, _ = u.shape
    outs = []
    for s in range(B):
        seq = [torch.zeros(D)]
        for t in range(T):
            if t > 0:
                ok = bool(real_q[s, t - 1]) and bool(real_q[s, t])
                seq.append(b[s, t] if ok else torch.zeros(D))
            seq.append(u[s, t])
        if m.role == "enc":
            seq.append(torch.zeros(D))
        inter = torch.stack(seq, 1).unsqueeze(0)  # 1 x d x (2T or 2T+1)
        outs.append(F.conv1d(inter, m.out_conv.weight, m.out_conv.bias, stride=2)[0].t())
    return torch.stack(outs)


@pytest.fixture(scope="module")
def batch():
    g = torch.Generator().manual_seed(1)
    x_q, x_kv = torch.randn(2, 5, D, generator=g), torch.randn(2, 6, D, generator=g)
    pad_kv = torch.zeros(2, 6, dtype=torch.bool)
    pad_kv[1, :2] = True  # a left-padded source
    pad_q = torch.zeros(2, 5, dtype=torch.bool)
    pad_q[0, 4:] = True  # a right-padded target
    return x_q, x_kv, pad_kv, pad_q


@pytest.mark.parametrize("attention,mode", COMBOS)
@pytest.mark.parametrize("role", ["enc", "dec", "cross"])
def test_equals_a_plain_loop_over_windows(batch, attention, mode, role):
    x_q, x_kv, pad_kv, pad_q = batch
    m = make(attention, mode, role)
    if role == "cross":
        args = (x_q, x_kv, pad_kv, pad_q)
    else:
        args = (x_q, x_q, pad_q, None)
    with torch.no_grad():
        out, _ = run(m, *args, causal=role == "dec")
        real_kv = ~args[2]
        real_q = real_kv if role != "cross" else ~pad_q
        ref = reference(m, args[0], args[1], real_q.float(), real_kv.float(), causal=role == "dec")
        if mode == "interleaved":
            ref = literal_interleaved(m, *ref, real_q)
    assert torch.allclose(out, ref, atol=1e-5), (out - ref).abs().max()


@pytest.mark.parametrize("role", ["enc", "dec", "cross"])
def test_unigram_only_equals_fairseq_multihead_attention(batch, role):
    x_q, x_kv, pad_kv, pad_q = batch
    torch.manual_seed(3)
    mha = MultiheadAttention(D, H, self_attention=role != "cross", encoder_decoder_attention=role == "cross").eval()
    kv, pad = (x_kv, pad_kv) if role == "cross" else (x_q, pad_q)
    mask = torch.triu(torch.full((5, 5), float("-inf")), 1) if role == "dec" else None
    want, want_w = mha(x_q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), key_padding_mask=pad,
                       attn_mask=mask, need_head_weights=True)
    for attention, mode in itertools.product(["convkv", "queryk"], ["homogeneous", "heterogeneous"]):
        m = PhraseBasedAttention(D, H, attention=attention, mode=mode, ngrams=[1], role=role).eval()
        m.load_state_dict(mha.state_dict())  # same parameter names and shapes
        got, got_w = m(x_q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), key_padding_mask=pad,
                       attn_mask=mask, need_head_weights=True)
        assert torch.allclose(got, want, atol=1e-6), (attention, mode)
        if want_w.dim() == 3:  # fairseq's fast path (self-attention) averages the heads regardless
            got_w = got_w.mean(dim=0)
        assert torch.allclose(got_w, want_w, atol=1e-6), (attention, mode)


@pytest.mark.parametrize("attention,mode", COMBOS)
@pytest.mark.parametrize("role", ["enc", "dec", "cross"])
def test_left_and_right_padding_give_the_same_outputs(attention, mode, role):
    """Each sentence padded on either side (different amounts) gives its unpadded output."""
    m = make(attention, mode, role)
    g = torch.Generator().manual_seed(2)
    lengths_q, lengths_kv = [3, 5], [6, 2]
    sents_q = [torch.randn(n, D, generator=g) for n in lengths_q]
    sents_kv = [torch.randn(n, D, generator=g) for n in lengths_kv] if role == "cross" else sents_q

    def padded(sents, side, extra):
        L = max(len(s) for s in sents) + extra
        x = torch.randn(len(sents), L, D, generator=g)  # garbage in the pads
        pad = torch.ones(len(sents), L, dtype=torch.bool)
        for i, s in enumerate(sents):
            sl = slice(L - len(s), L) if side == "left" else slice(0, len(s))
            x[i, sl], pad[i, sl] = s, False
        return x, pad, [range(L)[sl] for sl in [slice(L - len(s), L) if side == "left" else slice(0, len(s))
                                                 for s in sents]]

    with torch.no_grad():
        alone = []
        for i in range(2):
            q = sents_q[i].unsqueeze(0)
            kv = sents_kv[i].unsqueeze(0)
            alone.append(run(m, q, kv if role == "cross" else q, causal=role == "dec",
                             need_head_weights=True))
        sides = [("left", "right"), ("right", "left"), ("left", "left")] if role != "dec" else []
        for side_q, side_kv in sides:
            xq, pq, pos_q = padded(sents_q, side_q, 1)
            if role == "cross":
                xkv, pkv, pos_kv = padded(sents_kv, side_kv, 2)
                out, w = run(m, xq, xkv, pkv, pq, need_head_weights=True)
            else:
                out, w = run(m, xq, xq, pq, need_head_weights=True)
                pos_kv = pos_q
            for i in range(2):
                got = out[i, list(pos_q[i])]
                assert torch.allclose(got, alone[i][0][0], atol=1e-5), (side_q, side_kv, i)
                # token-level weights: the same distribution over the sentence's own tokens, none on pads
                wi = w[:, i][:, list(pos_q[i])]
                assert torch.allclose(wi[..., list(pos_kv[i])], alone[i][1][:, 0], atol=1e-5)
        if role == "dec":  # fairseq's targets: right-padded, under the causal mask
            xq, pq, pos_q = padded(sents_q, "right", 1)
            out, _ = run(m, xq, xq, pq, causal=True)
            for i in range(2):
                assert torch.allclose(out[i, list(pos_q[i])], alone[i][0][0], atol=1e-5)


def extra_parameters(attention, mode, role, ngrams, d, heads, shared_key=False):
    """The extra parameters of docs/peers.md's formulas, weights and biases, beyond MultiheadAttention's 4 d^2 + 4 d."""
    dk = d // heads
    if mode == "homogeneous":
        per_group = heads // len(ngrams)
        # each bigger head group: n-1 more taps for K and V (CONVKV) or for Q and V (QUERYK);
        # QUERYK's n-tap query also has n-1 more biases per head output
        w = sum((n - 1) * 2 * d * per_group * dk for n in ngrams)
        b = sum((n - 1) * per_group * dk for n in ngrams) if attention == "queryk" else 0
        return w + b
    big = [n for n in ngrams if n > 1]
    if attention == "convkv":
        extra = sum(2 * n * d * d + 2 * d for n in big)  # K, V convs with biases
    else:  # n-tap query (n d^2), key projection (d^2 unless shared), value conv (n d^2)
        extra = sum((2 * n + (0 if shared_key else 1)) * d * d + (n + (0 if shared_key else 1) + 1) * d for n in big)
    if mode == "interleaved":
        window = 3 if role == "enc" else 2
        extra += 2 * d * d + d  # bigram query conv Conv_2(Q, W_q2)
        if attention == "queryk":
            extra += 4 * d * d + 2 * d  # W_{q2,2}: window 2, two taps
        extra += (window - 1) * d * d  # the interleaving conv replaces W_O (d^2 + d)
    return extra


@pytest.mark.parametrize("attention,mode", COMBOS)
def test_parameter_counts_follow_the_formulas(attention, mode):
    d, heads = 64, 8  # the formulas hold at any size; base size is checked in test_pba_model
    baseline = sum(p.numel() for p in MultiheadAttention(d, heads, self_attention=True).parameters())
    assert baseline == 4 * d * d + 4 * d
    cases = [NGRAMS[mode]] if mode != "homogeneous" else [[1, 2], [1, 1, 1, 2, 2, 3, 3, 3]]
    if mode == "heterogeneous":
        cases = [[1, 2], [1, 2, 3], [1, 2, 3, 4]]
    for ngrams in cases:
        for role in ("enc", "dec", "cross"):
            for shared in ([False, True] if attention == "queryk" and mode != "homogeneous" else [False]):
                m = PhraseBasedAttention(d, heads, attention=attention, mode=mode, ngrams=ngrams, role=role,
                                         shared_key=shared)
                measured = sum(p.numel() for p in m.parameters())
                assert measured - baseline == extra_parameters(attention, mode, role, ngrams, d, heads, shared)


def test_weight_only_formulas_of_peers_a18():
    """The d^2 terms of docs/peers.md's formulas as printed there (biases aside)."""
    d, heads = 64, 8
    dd = d * d
    assert extra_parameters("convkv", "homogeneous", "enc", [1, 2], d, heads) == dd  # 4/4
    assert extra_parameters("convkv", "homogeneous", "enc", [1, 1, 1, 2, 2, 3, 3, 3], d, heads) == 2 * dd
    for ngrams, k in (([1, 2], 4), ([1, 2, 3], 10), ([1, 2, 3, 4], 18)):
        assert extra_parameters("convkv", "heterogeneous", "enc", ngrams, d, heads) // dd == k
        assert extra_parameters("queryk", "heterogeneous", "enc", ngrams, d, heads, True) // dd == k
    assert extra_parameters("queryk", "heterogeneous", "enc", [1, 2, 3], d, heads) // dd == 5 + 7
    assert extra_parameters("convkv", "interleaved", "enc", [1, 2], d, heads) // dd == 8
    assert extra_parameters("convkv", "interleaved", "dec", [1, 2], d, heads) // dd == 7
    assert extra_parameters("queryk", "interleaved", "enc", [1, 2], d, heads) // dd == 13
    assert extra_parameters("queryk", "interleaved", "cross", [1, 2], d, heads) // dd == 12


@pytest.mark.parametrize("attention,mode,ngrams,message", [
    ("convkv", "homogeneous", [1, 2, 3], "4 heads cannot be split evenly over 3 head groups"),
    ("convkv", "heterogeneous", [2, 3], "heterogeneous mode needs the unigram size 1"),
    ("queryk", "interleaved", [1, 2, 3], "the interleaved mode is defined for 1,2 only"),
    ("convkv", "heterogeneous", [1, 1, 2], "needs distinct sizes in increasing order"),
])
def test_configurations_that_cannot_be_built(attention, mode, ngrams, message):
    with pytest.raises(MGSAError, match=message):
        PhraseBasedAttention(D, H, attention=attention, mode=mode, ngrams=ngrams)


@pytest.mark.parametrize("attention,mode", COMBOS)
def test_half_and_bfloat16_forward_backward(batch, attention, mode):
    """float16 modules (every op has a CPU half kernel) and bfloat16 autocast: finite outputs and
    gradients within 1% (half) / 3% (bfloat16) of float32, relative to the largest float32 value
    (measured: 0.16% / 1.1%); no softmax row is ever fully masked, so no NaN rows either."""
    x_q, x_kv, pad_kv, pad_q = batch
    for role in ("dec", "cross"):
        m32 = make(attention, mode, role)
        kv, pkv = (x_kv, pad_kv) if role == "cross" else (x_q, pad_q)

        def step(m, dtype, autocast=False):
            m.zero_grad()
            xq = x_q.detach().clone().to(dtype).requires_grad_()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                out, _ = run(m, xq, kv.to(dtype) if role == "cross" else xq, pkv, pad_q if role == "cross" else None,
                             causal=role == "dec")
            out.float().pow(2).sum().backward()
            grads = [p.grad.float() for p in m.parameters()]
            return out.float(), xq.grad.float(), grads

        ref = step(m32, torch.float32)
        m16 = make(attention, mode, role).half()
        for got, tol in ((step(m16, torch.float16), 1e-2), (step(m32, torch.float32, autocast=True), 3e-2)):
            for a, b in zip([got[0], got[1], *got[2]], [ref[0], ref[1], *ref[2]]):
                assert torch.isfinite(a).all()
                assert (a - b).abs().max() <= tol * (1 + b.abs().max()), (role, (a - b).abs().max())


@pytest.mark.parametrize("n", [2, 3])
def test_ngram_conv_last_position_equals_the_full_convolution(n):
    """NGramConv(last_only=True), a decoding step's single output, = the last row of the full one."""
    from fairseq_mgsa.modules.pba.ngram_convolution import NGramConv
    torch.manual_seed(n)
    conv = NGramConv(D, 2 * D, n)
    x = torch.randn(3, 5, D)
    real = torch.ones(3, 5, dtype=torch.bool)
    real[1, :3] = False  # left pads inside the window
    real[2, 3] = False
    full = conv(x, real)
    for t in range(n - 1, 5):
        step = conv(x[:, : t + 1], real[:, : t + 1], last_only=True)
        assert step.shape == (3, 1, 2 * D)
        assert torch.allclose(step[:, 0], full[:, t], atol=1e-6), t


@pytest.mark.parametrize("attention,mode", COMBOS)
def test_a_decoding_step_computes_queries_and_ngrams_for_the_new_position_only(attention, mode):
    """Decoder self-attention, step t: every linear map and convolution of the step reads one
    position (their outputs have one row per hypothesis), whatever the window it keeps."""
    m = make(attention, mode, "dec")
    shapes = []
    hooks = [mod.register_forward_hook(lambda mod, inp, out: shapes.append((type(mod).__name__, tuple(out.shape))))
             for mod in m.modules() if isinstance(mod, (torch.nn.Linear, torch.nn.Conv1d))]
    x = torch.randn(4, 2, D)
    state = {}
    with torch.no_grad():
        for t in range(4):
            shapes.clear()
            m(x[t:t + 1], x[t:t + 1], x[t:t + 1], incremental_state=state)
            assert shapes and all(s[:2] == (2, 1) for _, s in shapes), (t, shapes)
    for h in hooks:
        h.remove()
