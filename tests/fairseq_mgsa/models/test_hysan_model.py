"""The registered `hysan_transformer`: architectures and options, parameter overhead at base
size, padding invariance, causality, incremental decoding with beam reordering, half precision."""

import copy
import os

import pytest
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.tasks.translation import TranslationTask
from omegaconf import OmegaConf

import fairseq_mgsa
from fairseq_mgsa import MGSAError
from fairseq_mgsa.models.hysan_transformer import HySANTransformerModel, parse_layers
from fairseq_mgsa.modules.hysan.attention import HybridMultiheadAttention

USER_DIR = os.path.dirname(os.path.abspath(fairseq_mgsa.__file__))
TINY = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
        "--dropout", "0", "--attention-dropout", "0"]
TINY_GATE = ["--hysan-gate-reduction", "4"]  # for the squeeze gate at width 16 (refused with other fusions)
ALL_BRANCHES = ["--hysan-encoder-branches", "global,forward,backward,local1,local2",
                "--hysan-decoder-branches", "global,local1"]
PAD = 1


def make_dict(n):
    d = Dictionary()
    for i in range(n):
        d.add_symbol(f"w{i}")
    return d


def parse(arch, *extra, tiny=False):
    gate = "--hysan-fusion" not in extra or extra[list(extra).index("--hysan-fusion") + 1] == "gate"
    return options.parse_args_and_arch(options.get_training_parser(),
                                       ["unused-data", "--user-dir", USER_DIR, "--arch", arch,
                                        *(TINY + TINY_GATE * gate if tiny else []), *extra])


def build(arch="hysan_transformer", *extra, tiny=True, vocab=20, seed=0):
    args = parse(arch, *extra, tiny=tiny)
    d = make_dict(vocab)
    torch.manual_seed(seed)
    return TranslationTask(args, d, d).build_model(args).eval()


@pytest.fixture(scope="module")
def model():
    return build("hysan_transformer", *ALL_BRANCHES)


def test_architectures_sizes_and_preset():
    for arch, dim, ffn, heads in (("hysan_transformer", 512, 2048, 8), ("hysan_transformer_big", 1024, 4096, 16),
                                  ("hysan_transformer_iwslt_de_en", 512, 1024, 4)):
        for name in (arch, arch + "_recommended"):
            args = parse(name)
            assert (args.encoder_embed_dim, args.encoder_ffn_embed_dim, args.encoder_attention_heads) == \
                (dim, ffn, heads)
            assert (args.hysan_encoder_branches, args.hysan_decoder_branches, args.hysan_fusion) == \
                ("global,forward,backward,local2", "global,local2", "gate")
            assert (args.hysan_gate_reduction, args.hysan_encoder_layers, args.hysan_decoder_layers) == \
                (64, "all", "all")
    # an explicit option wins over the preset
    assert parse("hysan_transformer_recommended", "--hysan-fusion", "add").hysan_fusion == "add"


def test_layers_and_global_only_stacks(model):
    assert model.encoder.hysan_layer_ids == [0, 1] and model.decoder.hysan_layer_ids == [0, 1]
    assert all(isinstance(layer.self_attn, HybridMultiheadAttention) for layer in model.encoder.layers)
    assert [b.name for b in model.encoder.layers[0].self_attn.branches] == \
        ["global", "forward", "backward", "local1", "local2"]
    # only layer 2 of the encoder; a decoder of just `global` keeps fairseq's attention
    m = build("hysan_transformer", "--hysan-encoder-layers", "2", "--hysan-decoder-branches", "global")
    assert m.encoder.hysan_layer_ids == [1] and m.decoder.hysan_layer_ids == []
    assert type(m.encoder.layers[0].self_attn).__name__ == "MultiheadAttention"
    assert all(type(layer.self_attn).__name__ == "MultiheadAttention" for layer in m.decoder.layers)
    assert parse_layers("1,3", 6, "--x") == [0, 2]


@pytest.mark.parametrize("extra,message", [
    (["--hysan-decoder-branches", "global,forward"], "--hysan-decoder-branches 'global,forward': directional branch"),
    (["--hysan-decoder-branches", "global,backward"], "directional branch 'backward' is for the encoder only"),
    (["--hysan-encoder-branches", "global,local0"], "local branch 'local0' has radius 0, expected K >= 1"),
    (["--hysan-encoder-branches", "global,left"], "unknown HySAN branch 'left'"),
    (["--hysan-encoder-layers", "1,3"], "--hysan-encoder-layers '1,3': layer 3 is out of range"),
    (["--hysan-gate-reduction", "0"], "--hysan-gate-reduction 0: expected r >= 1"),
    (["--cross-self-attention"], "--cross-self-attention: HySAN decoder branches need"),
])
def test_bad_options_stop_at_argument_parsing(extra, message):
    with pytest.raises(MGSAError, match=message.replace("(", r"\(")):
        parse("hysan_transformer", *extra, tiny=True)


def count(model):
    return sum(p.numel() for p in model.parameters())


def test_gate_overhead_at_base_size_is_under_one_percent():
    """Base size as in the paper's WMT14 En-De setup: a joined 32,000-entry subword vocabulary,
    all embeddings shared (fairseq's transformer: 60.5M parameters)."""
    shared = ["--share-all-embeddings"]
    vocab = 32000 - 4  # + fairseq's 4 special symbols
    baseline = count(build("transformer", *shared, tiny=False, vocab=vocab))
    gate = count(build("hysan_transformer_recommended", *shared, tiny=False, vocab=vocab))
    d, r = 512, 64
    sg = d * (d // r) + d // r + (d // r) * d + d  # f1 and f2 with biases
    # encoder: 4 branches x 6 layers, decoder: 2 branches x 6 layers, one gate each
    assert gate - baseline == (4 + 2) * 6 * sg
    overhead = (gate - baseline) / baseline
    print(f"\nbase {baseline:,} parameters, +gate {gate - baseline:,} = {100 * overhead:.3f}%")
    assert overhead < 0.01


def sentence_batch(side, lengths, vocab=20, seed=3):
    g = torch.Generator().manual_seed(seed)
    sents = [torch.randint(4, vocab + 4, (n,), generator=g) for n in lengths]
    t = max(lengths)
    tokens = torch.full((len(sents), t), PAD)
    for b, s in enumerate(sents):
        if side == "left":
            tokens[b, t - len(s):] = s
        else:
            tokens[b, :len(s)] = s
    return sents, tokens


def test_left_and_right_padding_give_each_sentence_its_own_output(model):
    lengths = [7, 4, 1, 3]
    sents, left = sentence_batch("left", lengths)
    _, right = sentence_batch("right", lengths)
    tgt_sents, prev = sentence_batch("right", [5, 2, 4, 3], seed=4)
    src_lengths = torch.tensor(lengths)
    with torch.no_grad():
        enc_l = model.encoder(left, src_lengths)["encoder_out"][0]  # T x B x C
        enc_r = model.encoder(right, src_lengths)["encoder_out"][0]
        dec_l = model(left, src_lengths, prev)[0]
        dec_r = model(right, src_lengths, prev)[0]
        assert torch.isfinite(enc_l).all() and torch.isfinite(enc_r).all()
        t = max(lengths)
        for b, s in enumerate(sents):
            n = len(s)
            alone = model.encoder(s[None], torch.tensor([n]))["encoder_out"][0][:, 0]
            torch.testing.assert_close(enc_l[t - n:, b], alone, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(enc_r[:n, b], alone, atol=1e-5, rtol=1e-5)
            m = len(tgt_sents[b])
            dec_alone = model(s[None], torch.tensor([n]), prev[b:b + 1, :m])[0][0]
            torch.testing.assert_close(dec_l[b, :m], dec_alone, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(dec_r[b, :m], dec_alone, atol=1e-5, rtol=1e-5)


def test_changing_target_token_t_plus_1_never_changes_outputs_up_to_t(model):
    _, src = sentence_batch("left", [6, 5])
    _, prev = sentence_batch("right", [7, 7], seed=5)
    with torch.no_grad():
        base = model(src, torch.tensor([6, 5]), prev)[0]
        for t in range(prev.size(1) - 1):
            changed = prev.clone()
            changed[:, t + 1] = 4 + (changed[:, t + 1] - 4 + 7) % 20
            out = model(src, torch.tensor([6, 5]), changed)[0]
            assert torch.equal(out[:, :t + 1], base[:, :t + 1])
            assert not torch.allclose(out[:, t + 1], base[:, t + 1])


def test_incremental_decoding_with_random_beam_reorder_equals_teacher_forced_forward(model):
    """Step by step with fairseq's incremental state, reordering the hypotheses of each
    sentence's beam at random between steps (rows may repeat), as beam search does: each
    step's output equals the full forward of the reordered prefixes. The local branch of a
    step sees only the last k + 1 cached positions."""
    lengths, beam = [6, 3, 5], 3
    _, src = sentence_batch("left", lengths)
    src, src_lengths = src.repeat_interleave(beam, 0), torch.tensor(lengths).repeat_interleave(beam)
    _, tgt = sentence_batch("right", [7] * len(src), seed=6)
    first_of_beam = (torch.arange(len(lengths)) * beam).repeat_interleave(beam)
    g = torch.Generator().manual_seed(7)
    model.decoder.set_beam_size(beam)  # as fairseq's SequenceGenerator does
    try:
        with torch.no_grad():
            enc = model.encoder(src, src_lengths)
            state = {}
            for t in range(tgt.size(1)):
                step = model.decoder(tgt[:, :t + 1], encoder_out=enc, incremental_state=state)[0][:, -1]
                full = model.decoder(tgt[:, :t + 1], encoder_out=enc)[0][:, -1]
                torch.testing.assert_close(step, full, atol=1e-5, rtol=1e-5)
                order = first_of_beam + torch.randint(0, beam, (len(src),), generator=g)
                model.decoder.reorder_incremental_state_scripting(state, order)
                enc = model.encoder.reorder_encoder_out(enc, order)
                tgt = tgt[order]
            assert len(set(map(tuple, tgt.tolist()))) < len(tgt)  # the reorders did copy hypotheses
    finally:
        model.decoder.set_beam_size(1)


@pytest.mark.parametrize("extra", [[], ["--hysan-directional-exclude-self"], ["--hysan-fusion", "concat"]])
def test_half_precision_forward_backward_finite_and_close_to_float32(extra):
    """Heavily left-padded sources (padding queries under forward and local masks), a padded
    target: float16 (.half() on CPU) and bfloat16 autocast stay finite and near float32."""
    m = build("hysan_transformer", *ALL_BRANCHES, *extra)
    lengths = [9, 2, 1, 5]
    _, src = sentence_batch("left", lengths)
    _, prev = sentence_batch("right", [6, 3, 2, 5], seed=8)
    real = prev.ne(PAD)
    src_lengths = torch.tensor(lengths)

    def run(module, autocast=None):
        module.zero_grad()
        if autocast:
            with torch.autocast("cpu", dtype=autocast):
                out = module(src, src_lengths, prev)[0]
        else:
            out = module(src, src_lengths, prev)[0]
        out = out.float()
        assert torch.isfinite(out).all()
        out[real].logsumexp(-1).sum().backward()
        grads = [p.grad.float() for p in module.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(gr).all() for gr in grads)
        return out[real], grads

    ref, ref_grads = run(m)
    # stated tolerances (observed about a third of them): logits of order 1-4 within out_tol
    # absolute; every gradient within grad_tol of the largest float32 gradient
    for module, autocast, out_tol, grad_tol in ((copy.deepcopy(m).half(), None, 1e-2, 2e-2),
                                                (m, torch.bfloat16, 6e-2, 5e-2)):
        out, grads = run(module, autocast)
        torch.testing.assert_close(out, ref, atol=out_tol, rtol=0)
        scale = max(gr.abs().max() for gr in ref_grads)
        assert max((a - b).abs().max() for a, b in zip(grads, ref_grads)) <= grad_tol * scale


def test_hydra_config_builds_the_same_model():
    """fairseq-hydra-train hands build_model a DictConfig: the HySAN fields must survive."""
    args = parse("hysan_transformer", "--hysan-encoder-branches", "global,local1", "--hysan-fusion", "concat",
                 tiny=True)
    d = make_dict(20)
    task = TranslationTask(args, d, d)
    a = HySANTransformerModel.build_model(args, task)
    b = HySANTransformerModel.build_model(OmegaConf.create(vars(args)), task)
    assert {k: v.shape for k, v in a.state_dict().items()} == {k: v.shape for k, v in b.state_dict().items()}
    assert [x.name for x in b.encoder.layers[0].self_attn.branches] == ["global", "local1"]
    assert b.encoder.layers[0].self_attn.fusion.kind == "concat"


def test_masks_are_combined_once_per_stack_and_forward(model, monkeypatch):
    """The encoder's and the decoder's hybrid layers share one MaskCache: fairseq hands each of
    a stack's layers the same padding mask and attn_mask, so a forward combines the masks once
    per stack, not once per layer; a new batch (new padding masks) builds again."""
    from fairseq_mgsa.modules.shared.mask_cache import MaskCache

    built = []
    get = MaskCache.get
    monkeypatch.setattr(MaskCache, "get", lambda self, key, tensors, build: get(
        self, key, tensors, lambda: built.append(key) or build()))
    lengths = [7, 4, 1, 3]
    _, src = sentence_batch("left", lengths)
    _, prev = sentence_batch("right", [5, 2, 4, 3], seed=4)
    with torch.no_grad():
        first = model(src, torch.tensor(lengths), prev)[0]
        assert len(built) == 2  # 2 encoder and 2 decoder layers
        second = model(src, torch.tensor(lengths), prev)[0]
        assert len(built) == 4
    torch.testing.assert_close(first, second, atol=0, rtol=0)
    assert len({id(layer.self_attn.mask_cache) for layer in model.encoder.layers}) == 1
    assert model.encoder.layers[0].self_attn.mask_cache is not model.decoder.layers[0].self_attn.mask_cache


def test_recompute_option_gives_the_same_training_step():
    """--hysan-recompute (the branches recomputed in the backward pass) changes what is kept,
    not what is computed: the same loss and gradients as the default."""
    lengths = [7, 4, 1, 3]
    _, src = sentence_batch("left", lengths)
    _, prev = sentence_batch("right", [5, 2, 4, 3], seed=4)
    real = prev.ne(PAD)
    grads = []
    for extra in ([], ["--hysan-recompute"]):
        m = build("hysan_transformer", *ALL_BRANCHES, *extra).train()  # dropout 0
        hybrid = [mod for mod in m.modules() if isinstance(mod, HybridMultiheadAttention)]
        assert len(hybrid) == 4 and all(mod.recompute == bool(extra) for mod in hybrid)
        m(src, torch.tensor(lengths), prev)[0][real].logsumexp(-1).sum().backward()
        grads.append({n: p.grad for n, p in m.named_parameters()})
    assert grads[0].keys() == grads[1].keys()
    for n in grads[0]:
        torch.testing.assert_close(grads[1][n], grads[0][n], atol=1e-6, rtol=1e-5, msg=n)


def test_recompute_with_relative_positions_recomputes_every_hybrid_layer(monkeypatch):
    """--hysan-recompute with --max-relative-positions: the relative layers take the explicit path
    (no fused attention), which now recomputes too: one checkpointed call a hybrid layer and
    training step (there were none), with the same loss and gradients as without the option."""
    import torch.utils.checkpoint

    calls = []
    checkpoint = torch.utils.checkpoint.checkpoint
    monkeypatch.setattr(torch.utils.checkpoint, "checkpoint",
                        lambda *a, **kw: calls.append(a[0]) or checkpoint(*a, **kw))
    lengths = [7, 4, 1, 3]
    _, src = sentence_batch("left", lengths)
    _, prev = sentence_batch("right", [5, 2, 4, 3], seed=4)
    real = prev.ne(PAD)
    losses, grads = [], []
    for extra in ([], ["--hysan-recompute"]):
        calls.clear()
        m = build("hysan_transformer", *ALL_BRANCHES, "--max-relative-positions", "2", *extra).train()  # dropout 0
        loss = m(src, torch.tensor(lengths), prev)[0][real].logsumexp(-1).sum()
        loss.backward()
        hybrid = [mod for mod in m.modules() if isinstance(mod, HybridMultiheadAttention)]
        assert len(hybrid) == 4 and len(calls) == (4 if extra else 0), calls
        losses.append(loss.detach())
        grads.append({n: p.grad for n, p in m.named_parameters()})
        with torch.no_grad():  # nothing to recompute outside training
            m(src, torch.tensor(lengths), prev)
        assert len(calls) == (4 if extra else 0)
    torch.testing.assert_close(losses[1], losses[0], atol=0, rtol=0)
    assert grads[0].keys() == grads[1].keys()
    for n in grads[0]:
        torch.testing.assert_close(grads[1][n], grads[0][n], atol=1e-6, rtol=1e-5, msg=n)
