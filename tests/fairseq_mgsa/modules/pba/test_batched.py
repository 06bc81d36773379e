"""The batched full forward of phrase-based attention (modules/pba/batched.py) against the plain
form it replaced: n-gram blocks and head groups one at a time, per-block products, concatenated
logits, one module per projection, masks rebuilt in every call. Outputs, attention weights and
gradients of every parameter and input; the spreading of n-gram weights over tokens against its
loop; the mask cache."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from fairseq_mgsa.modules.pba.ngram_convolution import end_aligned_windows, ngram_invalid, spread_over_tokens, zero_pads
from fairseq_mgsa.modules.shared.mask_cache import MaskCache
from fairseq_mgsa.modules.pba.attention import PhraseBasedAttention

D, H = 16, 4
MODES = {"homogeneous": [[1, 2], [1, 1, 2, 2], [2, 3]], "heterogeneous": [[1, 2], [1, 2, 3], [1]],
         "interleaved": [[1, 2]]}
CASES = [(a, m, ng, sk) for a in ("convkv", "queryk") for m, sizes in MODES.items() for ng in sizes
         for sk in ([False, True] if a == "queryk" and m != "homogeneous" else [False])]


def heads(x, h):
    B, T, C = x.shape
    return x.view(B, T, h, C // h).transpose(1, 2)


def plain_keys_values(m, x, real):
    """The per-size keys and values as computed before the batching: a module call per projection,
    pads zeroed before every n-gram convolution and QUERYK key window."""
    B, S, _ = x.shape
    out = {}
    for n, h in m.groups:
        invalid = ngram_invalid(real, n, S, B, x.device, m.mode == "homogeneous")
        if n == 1:
            k, v = heads(m.k_proj(x), h), heads(m.v_proj(x), h)
        else:
            v = heads(m.v_ngram[str(n)](x, real), h)
            if m.attention == "convkv":
                k = heads(m.k_ngram[str(n)](x, real), h)
            else:
                k = heads(zero_pads(m._key_linear(n)(x), real), h)
                k = end_aligned_windows(k.reshape(B * h, S, -1), n).view(B, h, S, -1)
        out[n] = (k, v, invalid)
    return out


def plain_forward(m, x_q, x_kv, pad_kv, pad_q, attn_mask, need_head_weights):
    """The full forward before the batching: queries per block and stream, attend's per-block products."""
    real_kv = ~pad_kv if pad_kv is not None else None
    real_q = real_kv if m.self_attention else (~pad_q if pad_q is not None else None)
    out, probs = m.combine(x_q, real_q, plain_keys_values(m, x_kv, real_kv), attn_mask)
    weights = m.token_weights(probs, real_kv).transpose(0, 1)
    return out, (weights if need_head_weights else weights.mean(0)), probs


def inputs(role, seed=0):
    g = torch.Generator().manual_seed(seed)
    B, T, S = 3, 6, 7 if role == "cross" else 6
    x_q = torch.randn(B, T, D, generator=g)
    x_kv = torch.randn(B, S, D, generator=g) if role == "cross" else x_q
    pad_q = torch.zeros(B, T, dtype=torch.bool)
    pad_q[1, -2:] = True  # right-padded target
    pad_kv = torch.zeros(B, S, dtype=torch.bool)
    pad_kv[2, :3] = True  # left-padded source
    if role != "cross":
        pad_kv = pad_q if role == "dec" else pad_kv
    mask = torch.triu(torch.full((T, T), float("-inf")), 1) if role == "dec" else None
    return x_q, x_kv, pad_kv, pad_q, mask


def grads_of(m, tensors, out, weights, seed):
    g = torch.Generator().manual_seed(seed)
    loss = (out * torch.randn(out.shape, generator=g)).sum() + (weights * torch.randn(weights.shape, generator=g)).sum()
    params = [p for p in m.parameters()]
    return torch.autograd.grad(loss, params + tensors, allow_unused=True)


@pytest.mark.parametrize("attention,mode,ngrams,shared", CASES)
@pytest.mark.parametrize("role", ["enc", "dec", "cross"])
@pytest.mark.parametrize("need_weights", [False, True])
def test_batched_full_forward_equals_the_plain_form(attention, mode, ngrams, shared, role, need_weights):
    torch.manual_seed(1)
    m = PhraseBasedAttention(D, H, attention=attention, mode=mode, ngrams=ngrams, role=role, shared_key=shared)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    m.train()  # dropout 0: training and evaluation alike
    x_q, x_kv, pad_kv, pad_q, mask = inputs(role)
    x_q = x_q.clone().requires_grad_()
    x_kv = x_kv.clone().requires_grad_() if role == "cross" else x_q
    tensors = [x_q] + ([x_kv] if role == "cross" else [])
    m.query_padding_mask = pad_q if role == "cross" else None
    m.keep_extra_weights(True)
    out, w = m(x_q.transpose(0, 1), x_kv.transpose(0, 1), x_kv.transpose(0, 1), key_padding_mask=pad_kv,
               attn_mask=mask, need_weights=need_weights, need_head_weights=need_weights)
    out = out.transpose(0, 1)
    if need_weights:
        # the kept n-gram parts, put back into one tensor per softmax (homogeneous: per head group)
        parts = [part.probs for part in m.kept_extra_weights()]
        got_probs = parts if m.mode == "homogeneous" else [torch.cat(parts, dim=-1)]
    m.keep_extra_weights(False)
    want, want_w, want_probs = plain_forward(m, x_q, x_kv, pad_kv, pad_q, mask, need_weights)
    assert torch.allclose(out, want, atol=1e-5), (out - want).abs().max()
    if need_weights:
        assert torch.allclose(w, want_w, atol=1e-6)
        assert len(got_probs) == len(want_probs)
        for a, b in zip(got_probs, want_probs):
            assert a.shape == b.shape and torch.allclose(a, b, atol=1e-6)
    else:
        assert w is None
        w = want_w = torch.zeros(())
    got = grads_of(m, tensors, out, w, 3)
    ref = grads_of(m, tensors, want, want_w, 3)
    names = [n for n, _ in m.named_parameters()] + ["x_q", "x_kv"]
    for name, a, b in zip(names, got, ref):
        if b is None:  # the plain form leaves a module unused (e.g. the query side of another stream)
            assert a is None or not a.abs().max() > 0, name
            continue
        assert a is not None and torch.allclose(a, b, atol=1e-5), (name, (a - b).abs().max())


def spread_loop(probs, n, real):
    """spread_over_tokens as it was: a loop over the n taps."""
    if n == 1:
        return probs
    S = probs.size(-1)
    realf = real.to(probs.dtype)
    count = F.pad(realf, (n - 1, 0)).unfold(1, n, 1).sum(-1).clamp(min=1)
    share = probs / count[:, None, None, :]
    out = torch.zeros_like(probs)
    for k in range(n):
        out[..., : S - k] += share[..., k:]
    return out * realf[:, None, None, :]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_spread_over_tokens_equals_the_loop_over_taps(n):
    g = torch.Generator().manual_seed(n)
    probs = torch.rand(2, 3, 4, 7, generator=g)
    real = torch.ones(2, 7, dtype=torch.bool)
    real[0, :2] = False
    real[1, -1] = False
    assert torch.allclose(spread_over_tokens(probs, n, real), spread_loop(probs, n, real), atol=1e-7)
    full = torch.ones(2, 7, dtype=torch.bool)
    assert torch.allclose(spread_over_tokens(probs, n, None), spread_loop(probs, n, full), atol=1e-7)


def test_mask_cache_rebuilds_for_other_or_changed_tensors():
    cache, built = MaskCache(), []

    def build(t):
        built.append(1)
        return (~t).clone()

    pad = torch.zeros(2, 3, dtype=torch.bool)
    first = cache.get(("sig",), (pad, None), lambda: build(pad))
    assert cache.get(("sig",), (pad, None), lambda: build(pad)) is first and len(built) == 1
    pad[0, 0] = True  # changed in place: its version moves on
    again = cache.get(("sig",), (pad, None), lambda: build(pad))
    assert len(built) == 2 and not again[0, 0]
    other = pad.clone()  # equal values, another tensor
    cache.get(("sig",), (other, None), lambda: build(other))
    assert len(built) == 3
    cache.get(("other signature",), (other, None), lambda: build(other))
    assert len(built) == 4


def test_a_model_stack_shares_one_mask_cache_and_builds_masks_once_per_batch(monkeypatch):
    from tests.fairseq_mgsa.models.test_model import build
    from fairseq_mgsa.modules.pba import masks as pba_masks

    model, _ = build(["--pba-mode", "heterogeneous", "--encoder-layers", "3", "--decoder-layers", "2"],
                     arch="pba_transformer")
    for stack in (model.encoder, model.decoder):
        caches = {id(m.mask_cache) for m in stack.modules() if isinstance(m, PhraseBasedAttention)}
        assert len(caches) == 1
    calls = []
    original = pba_masks.additive_mask
    monkeypatch.setattr("fairseq_mgsa.modules.pba.batched.additive_mask",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    src = torch.tensor([[1, 5, 6, 2], [7, 8, 9, 2]])
    prev = torch.tensor([[2, 5, 6, 1], [2, 7, 8, 9]])
    model.train()
    model(src, torch.tensor([3, 4]), prev)
    # encoder self, decoder self, cross: once each for the batch, whatever the number of layers
    assert len(calls) == 3
    model(src, torch.tensor([3, 4]), prev.clone())  # the next batch (fairseq makes new padding masks): all again
    assert len(calls) == 6


@pytest.mark.parametrize("attention,mode", list(itertools.product(["convkv", "queryk"], MODES)))
def test_fused_attention_path_in_half_precision_and_autocast(attention, mode):
    """Without weights to return (scaled_dot_product_attention, its mask in the products' dtype):
    a float16 module and bfloat16 autocast stay within 1% / 3% of float32 (measured: 0.1% / 0.8%)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 3, D, generator=g)
    pad = torch.zeros(3, 6, dtype=torch.bool)
    pad[1, :2] = True
    for role, mask in (("enc", None), ("dec", torch.triu(torch.full((6, 6), float("-inf")), 1))):
        torch.manual_seed(0)
        m = PhraseBasedAttention(D, H, attention=attention, mode=mode, ngrams=[1, 2], role=role).train()
        ref, _ = m(x, x, x, key_padding_mask=pad, attn_mask=mask, need_weights=False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf, _ = m(x, x, x, key_padding_mask=pad, attn_mask=mask, need_weights=False)
        half = PhraseBasedAttention(D, H, attention=attention, mode=mode, ngrams=[1, 2], role=role).train()
        half.load_state_dict(m.state_dict())
        h, _ = half.half()(x.half(), x.half(), x.half(), key_padding_mask=pad, attn_mask=mask, need_weights=False)
        scale = 1 + ref.abs().max()
        assert bf.dtype == torch.bfloat16 and (bf.float() - ref).abs().max() <= 3e-2 * scale
        assert h.dtype == torch.float16 and (h.float() - ref).abs().max() <= 1e-2 * scale
