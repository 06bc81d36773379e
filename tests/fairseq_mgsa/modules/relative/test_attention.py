"""Self-attention with relative position representations against Shaw et al.'s formula written
with loops, one sentence at a time (padding on either side, the decoder's causal mask), HySAN's
branches with relative positions likewise, and incremental decoding with beam reorders against
the full forward."""

import math

import pytest
import torch

from fairseq_mgsa.modules.hysan.attention import Branch
from fairseq_mgsa.modules.hysan.relative import RelativeHybridMultiheadAttention
from fairseq_mgsa.modules.relative.attention import RelativeMultiheadAttention

DIM, HEADS, T, K = 8, 2, 7, 2  # k = 2 < T - 1: some distances are clipped
LENGTHS = [7, 5, 2]


def shaw_reference(module, x, allowed):
    """One sentence (n x C). For every head h, query i and allowed key j (`allowed(i, j)`):
    e_ij = q_i (k_j + a^K[clip(j - i, -K, K)])^T / sqrt(d), z_i = sum_j softmax(e)_ij (v_j + a^V[...]).
    Returns (logits: H x n x n, -inf where not allowed; z: n x C, heads concatenated)."""
    n, d = x.size(0), DIM // HEADS
    q, k, v = module.q_proj(x), module.k_proj(x), module.v_proj(x)
    a_k, a_v = module.relative.keys, module.relative.values
    logits = torch.full((HEADS, n, n), float("-inf"))
    z = torch.zeros(n, DIM)
    for h in range(HEADS):
        cols = slice(h * d, (h + 1) * d)
        for i in range(n):
            for j in range(n):
                if allowed(i, j):
                    r = min(max(j - i, -K), K) + K
                    logits[h, i, j] = q[i, cols] @ (k[j, cols] + a_k[r]) / math.sqrt(d)
            p = torch.softmax(logits[h, i], dim=-1)
            for j in range(n):
                if allowed(i, j):
                    r = min(max(j - i, -K), K) + K
                    z[i, cols] += p[j] * (v[j, cols] + a_v[r])
    return logits, z


def padded(sentences, side):
    x = torch.zeros(T, len(sentences), DIM)
    pad = torch.ones(len(sentences), T, dtype=torch.bool)
    for b, s in enumerate(sentences):
        where = slice(T - s.size(0), T) if side == "left" else slice(0, s.size(0))
        x[where, b], pad[b, where] = s, False
    return x, pad


def causal_mask(n):  # as fairseq's decoder builds it
    return torch.triu(torch.full((n, n), float("-inf")), 1)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("side", ["left", "right"])
def test_logits_and_outputs_equal_shaw_et_al(side, causal):
    torch.manual_seed(0)
    module = RelativeMultiheadAttention(DIM, HEADS, K).eval()
    sentences = [torch.randn(n, DIM) for n in LENGTHS]
    x, pad = padded(sentences, side)
    mask = causal_mask(T) if causal else None
    with torch.no_grad():
        logits, _ = module(x, x, x, key_padding_mask=pad, attn_mask=mask, before_softmax=True)
        out, _ = module(x, x, x, key_padding_mask=pad, attn_mask=mask, need_weights=False)
    logits = logits.view(len(LENGTHS), HEADS, T, T)
    for b, s in enumerate(sentences):
        n = s.size(0)
        real = slice(T - n, T) if side == "left" else slice(0, n)
        with torch.no_grad():
            ref_logits, z = shaw_reference(module, s, (lambda i, j: j <= i) if causal else (lambda i, j: True))
            ref_out = module.out_proj(z)
        got = logits[b][:, real, real]
        assert torch.equal(torch.isinf(got), torch.isinf(ref_logits))
        finite = ~torch.isinf(ref_logits)
        torch.testing.assert_close(got[finite], ref_logits[finite], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out[real, b], ref_out, atol=1e-5, rtol=1e-5)
        assert torch.isinf(logits[b][:, real][..., pad[b]]).all()  # padded keys are never attended


def test_the_relative_terms_matter():
    """The reference would pass a module that ignored a^K and a^V only if they were zero: they are not,
    and changing one entry changes the output of a query at that distance."""
    torch.manual_seed(1)
    module = RelativeMultiheadAttention(DIM, HEADS, K).eval()
    x = torch.randn(5, 1, DIM)
    with torch.no_grad():
        before, _ = module(x, x, x)
        module.relative.keys[K + K] += 1.0  # distance >= +K: keys at least K to the right
        after_k, _ = module(x, x, x)
        module.relative.values[0] += 1.0    # distance <= -K
        after_v, _ = module(x, x, x)
    assert not torch.allclose(before[:3], after_k[:3])  # queries 0..2 have keys K or more to the right
    torch.testing.assert_close(before[3:], after_k[3:])  # queries 3, 4 have none
    assert not torch.allclose(after_k[2:], after_v[2:])
    torch.testing.assert_close(after_k[:2], after_v[:2])


DECODER_RULES = {"global": lambda i, j: j <= i, "local1": lambda i, j: i - 1 <= j <= i}
ENCODER_RULES = {"global": lambda i, j: True, "forward": lambda i, j: j <= i, "local1": lambda i, j: abs(i - j) <= 1}


@pytest.mark.parametrize("causal", [False, True])
def test_hysan_branches_with_relative_positions(causal):
    """Every branch: Shaw et al.'s scores plus the branch's mask, its own softmax and a^V sum; the
    branches added (fusion add) before W_O."""
    rules = DECODER_RULES if causal else ENCODER_RULES
    branches = [Branch("global")] + [Branch("local", 1)] + ([] if causal else [Branch("forward")])
    torch.manual_seed(2)
    module = RelativeHybridMultiheadAttention(DIM, HEADS, branches, K, fusion="add", causal=causal).eval()
    sentences = [torch.randn(n, DIM) for n in LENGTHS]
    x, pad = padded(sentences, "left")
    with torch.no_grad():
        out, _ = module(x, x, x, key_padding_mask=pad, attn_mask=causal_mask(T) if causal else None,
                        need_weights=False)
    for b, s in enumerate(sentences):
        n = s.size(0)
        with torch.no_grad():
            z = sum(shaw_reference(module, s, rules[br.name])[1] for br in branches)
            ref = module.out_proj(z)
        torch.testing.assert_close(out[T - n:, b], ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("hybrid", [False, True])
def test_incremental_decoding_with_beam_reorders_equals_the_full_forward(hybrid):
    torch.manual_seed(3)
    if hybrid:
        module = RelativeHybridMultiheadAttention(DIM, HEADS, [Branch("global"), Branch("local", 1)], K,
                                                  fusion="gate", gate_reduction=2, causal=True).eval()
    else:
        module = RelativeMultiheadAttention(DIM, HEADS, K).eval()
    bsz, steps = 3, 6
    x = torch.randn(steps, bsz, DIM)
    # beam reorders after steps 2 and 4: copies and drops; the full forward sees the reordered histories
    orders = {2: torch.tensor([2, 2, 0]), 4: torch.tensor([1, 0, 0])}
    history, state = x.clone(), {}
    with torch.no_grad():
        for t in range(steps):
            if t in orders:
                module.reorder_incremental_state(state, orders[t])
                history[:t] = history[:t, orders[t]]
            step, _ = module(x[t:t + 1], x[t:t + 1], x[t:t + 1], incremental_state=state, need_weights=False)
            full, _ = module(history[:t + 1], history[:t + 1], history[:t + 1], attn_mask=causal_mask(t + 1),
                             need_weights=False)
            torch.testing.assert_close(step[0], full[t], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("hybrid", [False, True])
def test_a_left_padded_target_stays_finite_and_gives_each_sentence_its_own_output(hybrid):
    """fairseq's decoder with --left-pad-target: under the causal mask a padding query's keys are
    all padding. Two layers (the module twice, as the NaN of such a row reached every real position
    at the next one): forward and gradients finite, each sentence's positions as the sentence alone."""
    torch.manual_seed(5)
    if hybrid:
        module = RelativeHybridMultiheadAttention(DIM, HEADS, [Branch("global"), Branch("local", 1)], K,
                                                  fusion="add", causal=True)
    else:
        module = RelativeMultiheadAttention(DIM, HEADS, K)

    def two_layers(x, pad, n):
        h = module(x, x, x, key_padding_mask=pad, attn_mask=causal_mask(n), need_weights=False)[0]
        return module(h, h, h, key_padding_mask=pad, attn_mask=causal_mask(n), need_weights=False)[0]

    sentences = [torch.randn(n, DIM) for n in LENGTHS]
    x, pad = padded(sentences, "left")
    x.requires_grad_()
    out = two_layers(x, pad, T)
    assert torch.isfinite(out).all()
    weight = torch.randn(out.shape)
    (out * weight)[~pad.t()].sum().backward()  # the loss sees the real positions only, as fairseq's does
    assert torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None)
    with torch.no_grad():
        for b, s in enumerate(sentences):
            n = s.size(0)
            alone = two_layers(s[:, None], None, n)[:, 0]
            torch.testing.assert_close(out[T - n:, b], alone, atol=1e-5, rtol=1e-5)
