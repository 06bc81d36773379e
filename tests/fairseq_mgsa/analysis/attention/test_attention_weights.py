"""mgsa-attention's recorder: the weights each system kind returns equal a plain computation
written here from the module's own parameters, rows sum to 1, outputs are unchanged by asking
for weights. The command itself: test_attention_maps.py."""

import pytest
import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention

from fairseq_mgsa.analysis.attention.recorder import AttentionRecorder
from fairseq_mgsa.modules.hysan.attention import HybridMultiheadAttention, parse_branches
from fairseq_mgsa.modules.mgsa.attention import MultiGranularitySelfAttention
from fairseq_mgsa.modules.mgsa.partition import ngram_partition, spans_to_partition
from fairseq_mgsa.modules.pba.attention import PhraseBasedAttention

C, H = 16, 4
d = C // H


def inputs(lengths=(7, 5), left_pad=True, seed=0):
    """x: T x B x C and the padding mask B x T (True at padding)."""
    torch.manual_seed(seed)
    T = max(lengths)
    mask = torch.zeros(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths):
        if left_pad:
            mask[b, :T - n] = True
        else:
            mask[b, n:] = True
    return torch.randn(T, len(lengths), C), mask


def head(linear, x, h):
    """Head h's rows of a projection: B x T x d."""
    return F.linear(x, linear.weight[h * d:(h + 1) * d], linear.bias[h * d:(h + 1) * d])


def softmax_rows(scores, allowed):
    """A plain softmax over the allowed keys of each row (python reference)."""
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.exp(scores - scores.max(-1, keepdim=True).values).div(
        torch.exp(scores - scores.max(-1, keepdim=True).values).sum(-1, keepdim=True))


def check_rows(weights, allowed_rows):
    """Every row a query attends with sums to 1."""
    sums = weights.sum(-1)
    assert torch.allclose(sums[allowed_rows.expand_as(sums)], torch.ones(()), atol=1e-5)


def test_transformer_self_attention_weights():
    """fairseq's MultiheadAttention, called as its encoder layer calls it (need_weights=False):
    the recorder gets per-head weights (not the fast path's head average) = softmax(QK^T/sqrt d)."""
    x, mask = inputs()
    attn = MultiheadAttention(C, H, self_attention=True).eval()
    plain, _ = attn(x, x, x, key_padding_mask=mask, need_weights=False)
    with AttentionRecorder({"enc1": attn}) as rec:
        out, _ = attn(query=x, key=x, value=x, key_padding_mask=mask, need_weights=False)
    assert attn.skip_embed_dim_check is False  # restored
    w = rec.weights["enc1"]  # H x B x T x T
    xb = x.transpose(0, 1)
    for h in range(H):
        ref = softmax_rows(head(attn.q_proj, xb, h) @ head(attn.k_proj, xb, h).transpose(1, 2) / d ** 0.5,
                           ~mask[:, None, :])
        assert torch.allclose(w[h], ref, atol=1e-5)
    check_rows(w, torch.ones(1, dtype=torch.bool))
    assert torch.allclose(out, plain, atol=1e-5)


def phrase_heads_reference(attn, x, mask, partitions):
    """Per head: the weights over its memory (tokens or phrase slots, padded to T) and the
    layer output, computed head by head from the module's parameters."""
    xb = x.transpose(0, 1)  # B x T x C
    B, T, _ = xb.shape
    grans = attn.phrase_granularities
    h_g, _ = attn.phrase_memory(xb, [partitions[g] for g in grans])  # Gr x B x P x C
    hpg = attn.heads_per_granularity
    weights, outs = torch.zeros(H, B, T, T), []
    for h in range(H):
        g = attn.granularities[h // hpg]
        if g == "word":
            memory, allowed = xb, ~mask[:, None, :]
        else:
            memory = h_g[grans.index(g)]
            P = memory.size(1)
            allowed = (torch.arange(P)[None, :] < partitions[g].num_phrases[:, None])[:, None, :]
        p = softmax_rows(head(attn.q_proj, xb, h) @ head(attn.k_proj, memory, h).transpose(1, 2) / d ** 0.5, allowed)
        weights[h, :, :, :p.size(-1)] = p
        outs.append(p @ head(attn.v_proj, memory, h))
    out = attn.out_proj(torch.cat(outs, dim=-1)).transpose(0, 1)  # T x B x C
    return weights, out


@pytest.mark.parametrize("kind", ["ngram", "syntactic"])
def test_mgsa_weights(kind):
    """MG-SA: word heads over tokens, phrase heads over their phrases: equal to the plain
    computation, rows sum to 1, the output equals the default (no weights) path's."""
    x, mask = inputs(left_pad=True)
    if kind == "ngram":
        grans = ["word", "ngram2", "ngram3", "ngram4"]
        partitions = {g: ngram_partition(mask, int(g[5:])) for g in grans[1:]}
    else:
        grans = ["word", "syn1", "syn2", "word"]  # out of order on purpose (group reordering)
        lengths = torch.tensor([[2, 4, 0], [1, 2, 1]])  # words only; EOS is a phrase of its own
        partitions = {"syn1": spans_to_partition(lengths, torch.tensor([2, 3]), mask),
                      "syn2": spans_to_partition(torch.tensor([[1, 1, 4], [1, 1, 2]]), torch.tensor([3, 3]), mask)}
    attn = MultiGranularitySelfAttention(C, H, grans, composition="san", interaction="onlstm").eval()
    with torch.no_grad():
        plain, _ = attn(x, mask, partitions)
        with AttentionRecorder({"enc1": attn}) as rec:
            out, _ = attn(x, key_padding_mask=mask, partitions=partitions)
        ref_w, ref_out = phrase_heads_reference(attn, x, mask, partitions)
    w = rec.weights["enc1"]  # H x B x T x slots
    assert torch.allclose(w, ref_w, atol=1e-5)
    check_rows(w, torch.ones(1, dtype=torch.bool))
    assert torch.allclose(out, plain, atol=1e-5) and torch.allclose(out, ref_out, atol=1e-5)
    # need_weights alone: token level, averaged over heads, each phrase's probability shared
    # evenly by its tokens
    with torch.no_grad():
        _, _, tok = attn(x, mask, partitions, need_weights=True)  # B x T x T
    expected = torch.zeros_like(tok)
    for h in range(H):
        g = attn.granularities[h // attn.heads_per_granularity]
        if g == "word":
            expected += ref_w[h] / H
            continue
        index = partitions[g].phrase_index  # B x T
        for b in range(index.size(0)):
            for s_ in range(index.size(1)):
                if index[b, s_] >= 0:
                    size = (index[b] == index[b, s_]).sum()
                    expected[b, :, s_] += ref_w[h, b, :, index[b, s_]] / size / H
    assert torch.allclose(tok, expected, atol=1e-5)
    assert torch.allclose(tok.sum(-1), torch.ones(()), atol=1e-5)


def ngram_keys(conv, x):
    """Conv_n ending at each token (zeros before the start): sum_j W_j x_{t-n+1+j} + b, B x T x out."""
    n = conv.weight.size(-1)
    xp = F.pad(x, (0, 0, n - 1, 0))
    return sum(xp[:, j:j + x.size(1)] @ conv.weight[:, :, j].T for j in range(n)) + conv.bias


def test_pba_homogeneous_convkv_weights():
    """PBA, homogeneous CONVKV 1,2: unigram heads over tokens, bigram heads over the bigrams
    (keys by the n-gram convolution); the token-level view shares a bigram's weight by its tokens."""
    x, _ = inputs(lengths=(6, 6))
    attn = PhraseBasedAttention(C, H, attention="convkv", mode="homogeneous", ngrams=(1, 2)).eval()
    with torch.no_grad(), AttentionRecorder({"enc1": attn}) as rec:
        attn(x, x, x, need_weights=False)
    xb = x.transpose(0, 1)
    q = attn.q_proj(xb)
    k = {1: attn.k_proj(xb), 2: ngram_keys(attn.k_ngram["2"], xb)}
    tokens = rec.weights["enc1"]  # H x B x T x T
    for group, (n, p) in enumerate(zip((1, 2), rec.extra["enc1"])):  # p: B x 2 x T x T
        for i in range(2):
            h = group * 2 + i
            qh = q[..., h * d:(h + 1) * d]
            kh = k[n][..., i * d:(i + 1) * d]
            ref = torch.softmax(qh @ kh.transpose(1, 2) / d ** 0.5, dim=-1)
            assert torch.allclose(p[:, i], ref, atol=1e-5)
            if n == 1:
                assert torch.allclose(tokens[h], ref, atol=1e-5)
            else:  # bigram ending at s covers s-1, s (one real token at s = 0)
                count = torch.tensor([1.0] + [2.0] * (ref.size(-1) - 1))
                share = ref / count
                spread = share + F.pad(share[..., 1:], (0, 1))
                assert torch.allclose(tokens[h], spread, atol=1e-5)
    check_rows(tokens, torch.ones(1, dtype=torch.bool))
    assert not attn.kept_extra_weights() and not attn.keeping_extra_weights


def test_hysan_branch_weights():
    """HySAN: one score matrix, each branch its own mask: every branch's probabilities."""
    x, mask = inputs(left_pad=False)
    branches = parse_branches("global,forward,backward,local1", decoder=False, option="test")
    attn = HybridMultiheadAttention(C, H, branches).eval()
    with torch.no_grad(), AttentionRecorder({"enc1": attn}) as rec:
        attn(x, x, x, key_padding_mask=mask, need_weights=False)
    xb = x.transpose(0, 1)
    T = xb.size(1)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    allowed = {"global": torch.ones(T, T, dtype=torch.bool), "forward": j <= i, "backward": j >= i,
               "local1": (i - j).abs() <= 1}
    for branch, p in zip(branches, rec.extra["enc1"]):  # B x H x T x T
        for h in range(H):
            scores = head(attn.q_proj, xb, h) @ head(attn.k_proj, xb, h).transpose(1, 2) / d ** 0.5
            blocked = scores.masked_fill(~allowed[branch.name], -1e8)  # the module's finite block
            ref = softmax_rows(blocked, ~mask[:, None, :])
            assert torch.allclose(p[:, h], ref, atol=1e-5), branch.name
            if branch.name == "global":
                assert torch.allclose(rec.weights["enc1"][h], ref, atol=1e-5)
        check_rows(p, torch.ones(1, dtype=torch.bool))
