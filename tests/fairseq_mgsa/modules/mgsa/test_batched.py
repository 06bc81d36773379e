"""MG-SA batched over granularities and head groups equals the per-granularity computation.

The layer builds every granularity's phrase memory with one module (weights stacked over
granularities, composition in either layout, one step loop of max(P) steps) and attends with all head groups in one
call. The references here are the per-granularity, per-group computation of the earlier
version, written plainly: sentence by sentence, phrase by phrase, one recurrence per
granularity over that granularity's own phrases, one attention per head group over its
own memory (words, or the sentence's phrases only: no padding, no mask).
"""

import math

import pytest
import torch
import torch.nn as nn

from fairseq_mgsa.modules import LSTMInteraction, MultiGranularitySelfAttention, ngram_partition
from fairseq_mgsa.modules.mgsa.interaction import phases

torch.manual_seed(0)


def padding_mask(lengths):
    """B x T, True at padding, left padded (fairseq's default for sources)."""
    T = max(lengths)
    mask = torch.ones(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, T - n:] = False
    return mask


# ---------------------------------------------------------------- plain references

def ref_onlstm(rec, j, x):
    """States of granularity j's ON-LSTM over x (n x C), one step and one neuron group at a time."""
    D, cs, nc = rec.dim, rec.chunk_size, rec.n_chunks
    h, c, out = x.new_zeros(D), x.new_zeros(D), []
    for t in range(x.size(0)):
        z = rec.weight_ih[j] @ x[t] + rec.bias_ih[j] + rec.weight_hh[j] @ h
        master_f = torch.cumsum(torch.softmax(z[:nc], 0), 0).repeat_interleave(cs)
        master_i = (1 - torch.cumsum(torch.softmax(z[nc:2 * nc], 0), 0)).repeat_interleave(cs)
        o, f, i, u = z[2 * nc:].split(D)
        w = master_f * master_i
        f_hat = torch.sigmoid(f) * w + (master_f - w)
        i_hat = torch.sigmoid(i) * w + (master_i - w)
        c = f_hat * c + i_hat * torch.tanh(u)
        h = torch.sigmoid(o) * torch.tanh(c)
        out.append(h)
    return torch.stack(out)


def ref_lstm(rec, j, x):
    """States of granularity j's LSTM over x (n x C): nn.LSTM's equations, gates i, f, g, o."""
    D = rec.dim
    h, c, out = x.new_zeros(D), x.new_zeros(D), []
    for t in range(x.size(0)):
        i, f, g, o = (rec.weight_ih[j] @ x[t] + rec.bias_ih[j] + rec.weight_hh[j] @ h).split(D)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        out.append(h)
    return torch.stack(out)


def ref_interaction(rec, j, g):
    if rec is None:
        return g
    states = ref_onlstm(rec, j, g) if hasattr(rec, "n_chunks") else ref_lstm(rec, j, g)
    return states @ rec.weight_out[j].t() + rec.bias_out[j]


def ref_compose(comp, j, tokens):
    """g_m of one phrase (its tokens: n x C) with granularity j's composition."""
    pooled = tokens.max(dim=0).values
    if hasattr(comp, "q_weight"):  # SANs
        q = comp.q_weight[j] @ pooled + comp.q_bias[j]
        k = tokens @ comp.k_weight[j].t() + comp.k_bias[j]
        return torch.softmax(k @ q / math.sqrt(q.numel()), dim=0) @ tokens
    if hasattr(comp, "per_granularity"):  # LSTM
        lstm = comp.per_granularity[j]
        _, (h, _) = lstm.lstm(tokens.unsqueeze(1))
        return lstm.out_proj(h[0, 0])
    return pooled


def ref_attention(attn, x, mask, partitions):
    """The earlier per-group MG-SA, sentence by sentence. Returns ({(t, b): output C},
    {(g, b, p): composed phrase C}) over real tokens and phrases."""
    d, hpg, C = attn.head_dim, attn.heads_per_granularity, attn.embed_dim
    memory = attn.phrase_memory
    outputs, composed = {}, {}
    for b in range(x.size(1)):
        real = (~mask[b]).nonzero().flatten().tolist()
        words = x[real, b]  # n x C
        memories = {}
        for j, g in enumerate(attn.phrase_granularities):
            index = partitions[g].phrase_index[b]
            phrases = [ref_compose(memory.composition, j, x[(index == p).nonzero().flatten(), b])
                       for p in range(int(partitions[g].num_phrases[b]))]
            for p, vec in enumerate(phrases):
                composed[g, b, p] = vec
            memories[g] = ref_interaction(memory.interaction, j, torch.stack(phrases))
        heads = []
        for i, g in enumerate(attn.granularities):
            rows = slice(i * hpg * d, (i + 1) * hpg * d)
            src = words if g == "word" else memories[g]
            q = words @ attn.q_proj.weight[rows].t() + attn.q_proj.bias[rows]
            k = src @ attn.k_proj.weight[rows].t() + attn.k_proj.bias[rows]
            v = src @ attn.v_proj.weight[rows].t() + attn.v_proj.bias[rows]
            for h in range(hpg):
                cols = slice(h * d, (h + 1) * d)
                w = torch.softmax(q[:, cols] @ k[:, cols].t() / math.sqrt(d), dim=-1)
                heads.append(w @ v[:, cols])
        out = attn.out_proj(torch.cat(heads, dim=-1))
        for n, t in enumerate(real):
            outputs[t, b] = out[n]
    return outputs, composed


def loss_of(outputs, composed, weights):
    return sum((v * weights[k]).sum() for k, v in {**outputs, **composed}.items())


# ---------------------------------------------------------------- tests

CASES = [  # granularities, heads, composition, interaction
    (["word", "ngram2", "ngram3", "ngram4"], 8, "san", "onlstm"),
    (["word", "ngram2", "ngram3", "ngram4"], 4, "max", "lstm"),
    (["word", "ngram4", "ngram2", "ngram3"], 4, "san", "onlstm"),  # phrase counts not ordered: no phases
    (["ngram3", "word", "ngram2", "ngram3"], 4, "lstm", "none"),  # groups out of order, a repeated memory
    (["ngram2", "ngram3"], 2, "san", "lstm"),  # no word heads
]


@pytest.mark.parametrize("compose_all_at_once", [False, True], ids=["compose_each", "compose_all"])
@pytest.mark.parametrize("granularities,heads,composition,interaction", CASES)
def test_batched_mgsa_equals_per_granularity_reference(granularities, heads, composition, interaction,
                                                       compose_all_at_once):
    """Both composition layouts (per granularity, the CPU's; all at once, the GPU's)."""
    C = 16
    attn = MultiGranularitySelfAttention(C, heads, granularities, composition=composition,
                                         interaction=interaction).eval()
    if attn.phrase_memory is not None:
        attn.phrase_memory.compose_all_at_once = compose_all_at_once
    mask = padding_mask([11, 7, 3])
    partitions = {g: ngram_partition(mask, int(g[5:])) for g in attn.phrase_granularities}
    x = torch.randn(mask.size(1), 3, C, requires_grad=True)

    out, composed = attn(x, key_padding_mask=mask, partitions=partitions)
    ref_out, ref_composed = ref_attention(attn, x, mask, partitions)
    got_out = {k: out[k] for k in ref_out}
    got_composed = {(g, b, p): composed[g][0][b, p] for g, b, p in ref_composed}
    for g, (c, part) in composed.items():
        assert c.shape[:2] == (3, part.max_phrases) and part is partitions[g]
    for got, ref in ((got_out, ref_out), (got_composed, ref_composed)):
        for k in ref:
            torch.testing.assert_close(got[k], ref[k], atol=1e-5, rtol=1e-5, msg=str(k))

    # gradients of every parameter and of the input, through outputs and composed phrases
    weights = {k: torch.randn(C) for k in {**ref_out, **ref_composed}}
    leaves = [x, *attn.parameters()]
    grads = torch.autograd.grad(loss_of(got_out, got_composed, weights), leaves, allow_unused=True)
    ref_grads = torch.autograd.grad(loss_of(ref_out, ref_composed, weights), leaves, allow_unused=True)
    names = ["x"] + [n for n, _ in attn.named_parameters()]
    for name, g, r in zip(names, grads, ref_grads):
        assert (g is None) == (r is None), name
        if g is not None:
            torch.testing.assert_close(g, r, atol=1e-4, rtol=1e-4, msg=name)


def test_phases_run_each_granularity_its_own_steps():
    assert phases([3, 5, 8]) == [(3, (0, 3)), (5, (1, 3)), (8, (2, 3))]  # tree levels: a suffix runs on
    assert phases([8, 4, 4]) == [(4, (0, 3)), (8, (0, 1))]  # n-grams of growing n: a prefix
    # while the running ones are not a block, every granularity runs
    assert phases([8, 2, 5]) == [(5, (0, 3)), (8, (0, 1))]
    assert phases([6, 6]) == [(6, (0, 2))]


@pytest.mark.parametrize("interaction", ["lstm", "onlstm"])
@pytest.mark.parametrize("max_phrases", [[3, 5, 2], [5, 4, 1], [1, 1, 1]], ids=["prefix", "phases", "one-step"])
def test_recurrent_weight_gradient_by_finite_differences(interaction, max_phrases):
    """The stacked recurrences' gradients over phases where granularities leave the batch (the
    weights sliced per phase): gradcheck compares every input's and weight's gradient with
    finite differences, in float64."""
    from fairseq_mgsa.modules.mgsa.interaction import build_interaction

    rec = build_interaction(interaction, 3, 4, 4, 2).double()
    g = torch.randn(3, 2, max(max_phrases), 4, dtype=torch.float64, requires_grad=True)
    names = [n for n, _ in rec.named_parameters()]

    def run(g, *weights):
        return torch.func.functional_call(rec, dict(zip(names, weights)), (g, max_phrases))

    weights = [p.detach().clone().requires_grad_() for p in rec.parameters()]
    assert torch.autograd.gradcheck(run, (g, *weights))


def test_lstm_interaction_is_nn_lstm():
    """Same gate order and equations as nn.LSTM (the b_ih + b_hh sum held as one bias), so that
    nn.LSTM weights of older checkpoints convert by stacking."""
    rec = LSTMInteraction(2, 6, 4)
    x = torch.randn(2, 3, 5, 6)
    out = rec(x, [5, 5])
    for j in range(2):
        lstm = nn.LSTM(6, 4, batch_first=True)
        bias_hh = torch.randn(16)
        with torch.no_grad():
            lstm.weight_ih_l0.copy_(rec.weight_ih[j])
            lstm.weight_hh_l0.copy_(rec.weight_hh[j])
            lstm.bias_ih_l0.copy_(rec.bias_ih[j] - bias_hh)
            lstm.bias_hh_l0.copy_(bias_hh)
        states, _ = lstm(x[j])
        torch.testing.assert_close(out[j], states @ rec.weight_out[j].t() + rec.bias_out[j], atol=1e-5, rtol=1e-5)


def test_quant_noise_reaches_keys_and_values():
    """--quant-noise-pq: fairseq's hook drops blocks of a projection's weight (scaling the rest by
    1 / (1 - p)) when the module is called; K and V must see it as Q and the output map do."""
    torch.manual_seed(1)
    attn = MultiGranularitySelfAttention(16, 4, ["word", "ngram2", "ngram3", "ngram4"],
                                         q_noise=0.5, qn_block_size=4).train()
    before = {n: getattr(attn, n).weight.detach().clone() for n in ("k_proj", "v_proj")}
    mask = padding_mask([6, 4])
    partitions = {f"ngram{n}": ngram_partition(mask, n) for n in (2, 3, 4)}
    x = torch.randn(6, 2, 16)
    noisy, _ = attn(x, key_padding_mask=mask, partitions=partitions)
    for name, w0 in before.items():
        w = getattr(attn, name).weight.detach().view(16, 4, 4)  # blocks of 4 input features
        dropped = (w == 0).all(dim=-1)
        assert 0 < dropped.float().mean() < 1, name
        torch.testing.assert_close(w[~dropped], 2 * w0.view(16, 4, 4)[~dropped])
    # the training forward used the noised K and V weights (evaluation adds no more noise)
    clean, _ = attn.eval()(x, key_padding_mask=mask, partitions=partitions)
    torch.testing.assert_close(noisy, clean)


# ---------------------------------------------------------------- checkpoints of the per-granularity layout

def old_layout(state_dict, prefix, granularities, rng):
    """The state dict as the per-granularity version named it: one module per granularity
    under `phrase_memories.<g>.` (SANComposition q_proj / k_proj; LSTMComposition lstm /
    out_proj; ONLSTMInteraction onlstm.ih / onlstm.hh / out_proj; LSTMInteraction nn.LSTM
    `lstm` with its two biases / out_proj)."""
    names = {
        "composition.q_weight": "composition.q_proj.weight", "composition.q_bias": "composition.q_proj.bias",
        "composition.k_weight": "composition.k_proj.weight", "composition.k_bias": "composition.k_proj.bias",
        "interaction.weight_out": "interaction.out_proj.weight", "interaction.bias_out": "interaction.out_proj.bias",
    }
    onlstm = {"interaction.weight_ih": "interaction.onlstm.ih.weight",
              "interaction.bias_ih": "interaction.onlstm.ih.bias",
              "interaction.weight_hh": "interaction.onlstm.hh.weight"}
    lstm = {"interaction.weight_ih": "interaction.lstm.weight_ih_l0",
            "interaction.weight_hh": "interaction.lstm.weight_hh_l0"}
    is_lstm = state_dict[prefix + "phrase_memory.interaction.weight_ih"].size(1) == 4 * \
        state_dict[prefix + "phrase_memory.interaction.weight_hh"].size(2)
    out = {}
    for key, value in state_dict.items():
        if not key.startswith(prefix + "phrase_memory."):
            out[key] = value
            continue
        rest = key[len(prefix + "phrase_memory."):]
        for j, g in enumerate(granularities):
            old = prefix + f"phrase_memories.{g}."
            if rest.startswith("composition.per_granularity."):
                _, _, index, tail = rest.split(".", 3)
                if int(index) == j:
                    out[old + "composition." + tail] = value
            elif is_lstm and rest == "interaction.bias_ih":  # nn.LSTM holds two biases
                bias_hh = torch.randn(value.size(1), generator=rng)
                out[old + "interaction.lstm.bias_ih_l0"] = value[j] - bias_hh
                out[old + "interaction.lstm.bias_hh_l0"] = bias_hh
            else:
                out[old + {**names, **(lstm if is_lstm else onlstm)}[rest]] = value[j]
    return out


def build_model(composition, interaction, seed):
    import os
    from fairseq import options
    from fairseq.data import Dictionary
    from fairseq.tasks.translation import TranslationTask
    import fairseq_mgsa

    args = options.parse_args_and_arch(options.get_training_parser(), [
        "unused-data", "--user-dir", os.path.dirname(os.path.abspath(fairseq_mgsa.__file__)),
        "--arch", "mgsa_transformer", "--encoder-layers", "1", "--decoder-layers", "1",
        "--encoder-embed-dim", "16", "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "16",
        "--decoder-ffn-embed-dim", "16", "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
        "--mgsa-composition", composition, "--mgsa-interaction", interaction])
    d = Dictionary()
    for i in range(10):
        d.add_symbol(f"w{i}")
    torch.manual_seed(seed)
    return TranslationTask(args, d, d).build_model(args)


@pytest.mark.parametrize("composition,interaction", [("san", "onlstm"), ("lstm", "lstm")])
def test_checkpoints_of_the_per_granularity_layout_load(tmp_path, composition, interaction):
    from fairseq_mgsa import MGSAError

    model = build_model(composition, interaction, seed=1)
    prefix = "encoder.layers.0.self_attn."
    granularities = model.encoder.layers[0].self_attn.phrase_granularities
    old = old_layout(model.state_dict(), prefix, granularities, torch.Generator().manual_seed(0))
    assert not any(".phrase_memory." in k for k in old) and any(".phrase_memories.ngram3." in k for k in old)
    torch.save({"model": old}, tmp_path / "old.pt")
    loaded = build_model(composition, interaction, seed=2)
    loaded.load_state_dict(torch.load(tmp_path / "old.pt", weights_only=True)["model"])  # fairseq upgrades first
    expected = model.state_dict()
    assert loaded.state_dict().keys() == expected.keys()
    for key, value in loaded.state_dict().items():
        torch.testing.assert_close(value, expected[key], msg=key)

    # a checkpoint of other granularities is refused with the reason
    partial = {k: v for k, v in old.items() if ".phrase_memories.ngram4." not in k}
    with pytest.raises(MGSAError, match="not for ngram4: it was written for other MG-SA granularities"):
        build_model(composition, interaction, seed=2).load_state_dict(partial)
