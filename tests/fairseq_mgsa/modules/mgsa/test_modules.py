"""Value checks of the MG-SA building blocks against plain reference computations."""

import math

import pytest
import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention

from fairseq_mgsa.modules import (
    LSTMComposition,
    MaxPoolComposition,
    ONLSTMInteraction,
    MultiGranularitySelfAttention,
    PhraseMemory,
    SANComposition,
    ngram_partition,
    spans_to_partition,
)

torch.manual_seed(0)


def padding_mask(lengths, left: bool):
    T = max(lengths)
    mask = torch.ones(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths):
        if left:
            mask[b, T - n:] = False
        else:
            mask[b, :n] = False
    return mask


def reference_ngram_spans(length: int, n: int):
    """Phrases as lists of positions: n-grams over the words, EOS (last position) alone."""
    words = list(range(length - 1))
    return [words[i:i + n] for i in range(0, len(words), n)] + [[length - 1]]


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ngram_partition_matches_reference(left, n):
    lengths = [1, 2, 5, 7, 9]
    mask = padding_mask(lengths, left)
    part = ngram_partition(mask, n)
    for b, length in enumerate(lengths):
        real = (~mask[b]).nonzero().squeeze(1)
        idx = part.phrase_index[b, real].tolist()
        expected = [p for p, span in enumerate(reference_ngram_spans(length, n)) for _ in span]
        assert idx == expected
        assert part.num_phrases[b] == len(reference_ngram_spans(length, n))
        assert (part.phrase_index[b][mask[b]] == -1).all()


@pytest.mark.parametrize("left", [True, False])
def test_spans_to_partition_places_eos_alone(left):
    lengths = [6, 3]  # tokens incl. EOS
    phrase_lengths = torch.tensor([[2, 3], [1, 1]])
    mask = padding_mask(lengths, left)
    part = spans_to_partition(phrase_lengths, torch.tensor([2, 2]), mask)
    assert part.phrase_index[0][~mask[0]].tolist() == [0, 0, 1, 1, 1, 2]
    assert part.phrase_index[1][~mask[1]].tolist() == [0, 1, 2]
    assert part.num_phrases.tolist() == [3, 3]


def flat_inputs(B=3, T=7, C=8, n=2, left=True):
    lengths = [T, T - 3, 2][:B]
    mask = padding_mask(lengths, left)
    part = ngram_partition(mask, n)
    x = torch.randn(B, T, C)
    P = part.max_phrases
    index = part.phrase_index + (torch.arange(B) * P).unsqueeze(1)
    index = index.masked_fill(part.phrase_index < 0, B * P).view(-1)
    return x, mask, part, index, B * P + 1


def phrases_of(x, mask, part):
    """{(b, p): tokens of phrase p of sentence b}, the plain way."""
    out = {}
    for b in range(x.size(0)):
        for t in range(x.size(1)):
            p = int(part.phrase_index[b, t])
            if p >= 0:
                out.setdefault((b, p), []).append(x[b, t])
    return {k: torch.stack(v) for k, v in out.items()}


def test_maxpool_composition_equals_plain_max():
    x, mask, part, index, S = flat_inputs()
    g = MaxPoolComposition()(x.reshape(-1, x.size(-1)), index, S)
    P = part.max_phrases
    for (b, p), tokens in phrases_of(x, mask, part).items():
        torch.testing.assert_close(g[b * P + p], tokens.max(dim=0).values)


def test_san_composition_equals_plain_attention():
    x, mask, part, index, S = flat_inputs()
    comp = SANComposition(1, x.size(-1), 4)
    g = comp(x.reshape(-1, x.size(-1)), index, S, 0)
    P = part.max_phrases
    for (b, p), tokens in phrases_of(x, mask, part).items():
        q = tokens.max(dim=0).values @ comp.q_weight[0].t() + comp.q_bias[0]
        k = tokens @ comp.k_weight[0].t() + comp.k_bias[0]
        w = torch.softmax(k @ q / math.sqrt(4), dim=0)
        torch.testing.assert_close(g[b * P + p], w @ tokens)


def test_lstm_composition_equals_lstm_run_per_phrase():
    x, mask, part, index, S = flat_inputs(n=3)
    comp = LSTMComposition(x.size(-1), 5)
    g = comp(x.reshape(-1, x.size(-1)), index, S)
    P = part.max_phrases
    for (b, p), tokens in phrases_of(x, mask, part).items():
        _, (h, _) = comp.lstm(tokens.unsqueeze(1))
        torch.testing.assert_close(g[b * P + p], comp.out_proj(h[0, 0]), atol=1e-5, rtol=1e-5)


def reference_onlstm(cell: ONLSTMInteraction, j, x):
    """ON-LSTM (Shen et al. 2019) of granularity j written step by step for one sequence,
    neuron by neuron for the gates (states, before the output map)."""
    H, cs, nc = cell.dim, cell.chunk_size, cell.n_chunks
    h, c = torch.zeros(H), torch.zeros(H)
    outs = []
    for t in range(x.size(0)):
        z = cell.weight_ih[j] @ x[t] + cell.bias_ih[j] + cell.weight_hh[j] @ h
        mf, mi = z[:nc], z[nc:2 * nc]
        o, f, i, u = z[2 * nc:].split(H)
        pf, pi = torch.softmax(mf, 0), torch.softmax(mi, 0)
        master_f = torch.stack([pf[:k + 1].sum() for k in range(nc)])
        master_i = torch.stack([1 - pi[:k + 1].sum() for k in range(nc)])
        master_f = torch.stack([master_f[j // cs] for j in range(H)])
        master_i = torch.stack([master_i[j // cs] for j in range(H)])
        w = master_f * master_i
        f_hat = torch.sigmoid(f) * w + (master_f - w)
        i_hat = torch.sigmoid(i) * w + (master_i - w)
        c = f_hat * c + i_hat * torch.tanh(u)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs)


@pytest.mark.parametrize("chunk_size", [1, 2, 4])
def test_onlstm_equals_step_by_step_reference(chunk_size):
    cell = ONLSTMInteraction(2, 6, 8, chunk_size)
    x = torch.randn(2, 2, 5, 6)
    out = cell(x, [5, 5])
    for j in range(2):
        for b in range(2):
            expected = reference_onlstm(cell, j, x[j, b]) @ cell.weight_out[j].t() + cell.bias_out[j]
            torch.testing.assert_close(out[j, b], expected, atol=1e-5, rtol=1e-5)


def test_word_only_mgsa_equals_fairseq_multihead_attention():
    C, H = 16, 4
    mha = MultiheadAttention(C, H, self_attention=True).eval()
    mgsa = MultiGranularitySelfAttention(C, H, ["word", "word"]).eval()
    mgsa.load_state_dict(mha.state_dict())
    mask = padding_mask([6, 4, 2], left=True)
    x = torch.randn(6, 3, C)
    expected, _ = mha(x, x, x, key_padding_mask=mask, need_weights=False)
    got, composed = mgsa(x, key_padding_mask=mask, partitions={})
    real = ~mask.t()
    torch.testing.assert_close(got[real], expected[real], atol=1e-5, rtol=1e-5)
    assert composed == {}


def test_phrase_heads_attend_to_phrase_memory():
    """A phrase head's output is softmax(Q K_g^T) V_g over the phrase memory, computed here by hand."""
    C, H = 8, 2
    attn = MultiGranularitySelfAttention(C, H, ["word", "ngram2"], composition="max").eval()
    x = torch.randn(5, 1, C)
    mask = torch.zeros(1, 5, dtype=torch.bool)
    part = ngram_partition(mask, 2)
    out, _ = attn(x, key_padding_mask=None, partitions={"ngram2": part})
    h = x[:, 0]  # T x C
    memory = torch.stack([h[0:2].max(0).values, h[2:4].max(0).values, h[4]])  # two bigrams + EOS
    d = C // H
    q = attn.q_proj(h)
    k_word, v_word = attn.k_proj(h), attn.v_proj(h)
    k_phr, v_phr = attn.k_proj(memory), attn.v_proj(memory)
    o_word = torch.softmax(q[:, :d] @ k_word[:, :d].t() / math.sqrt(d), -1) @ v_word[:, :d]
    o_phr = torch.softmax(q[:, d:] @ k_phr[:, d:].t() / math.sqrt(d), -1) @ v_phr[:, d:]
    expected = attn.out_proj(torch.cat([o_word, o_phr], -1))
    torch.testing.assert_close(out[:, 0], expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("composition", ["max", "san", "lstm"])
@pytest.mark.parametrize("interaction", ["none", "lstm", "onlstm"])
def test_gradients_reach_every_parameter(composition, interaction):
    attn = MultiGranularitySelfAttention(16, 4, ["word", "ngram2", "ngram3", "ngram4"],
                                         composition=composition, interaction=interaction)
    mask = padding_mask([9, 6], left=True)
    partitions = {f"ngram{n}": ngram_partition(mask, n) for n in (2, 3, 4)}
    x = torch.randn(9, 2, 16, requires_grad=True)
    out, _ = attn(x, key_padding_mask=mask, partitions=partitions)
    out[~mask.t()].pow(2).sum().backward()
    for name, p in attn.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    assert x.grad.abs().sum() > 0


def test_phrase_memory_ignores_padding_phrases():
    """Interaction runs over right-padded phrase slots; a real phrase must not see them."""
    mem = PhraseMemory(1, 8, 4, "san", "onlstm", 2)
    mask = padding_mask([7, 3], left=True)
    part = ngram_partition(mask, 2)
    x = torch.randn(2, 7, 8)
    h_batch, _ = mem(x, [part])
    alone_mask = torch.zeros(1, 3, dtype=torch.bool)
    h_alone, _ = mem(x[1:, 4:], [ngram_partition(alone_mask, 2)])
    n = int(part.num_phrases[1])
    torch.testing.assert_close(h_batch[0, 1, :n], h_alone[0, 0, :n], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("spec,error", [
    (dict(granularities=["word", "trigram"]), "unknown MG-SA granularity 'trigram'"),
    (dict(granularities=["word", "ngram2", "ngram3"]), "4 heads cannot be split evenly over 3 granularities"),
    (dict(granularities=["word", "ngram2"], composition="cnn"), "unknown phrase composition 'cnn'"),
    (dict(granularities=["word", "ngram2"], interaction="gru"), "unknown phrase interaction 'gru'"),
])
def test_bad_configuration_is_a_clear_error(spec, error):
    with pytest.raises(ValueError, match=error):
        MultiGranularitySelfAttention(16, 4, **spec)
