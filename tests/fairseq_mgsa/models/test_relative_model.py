"""The registered `relative_transformer` and `hysan_transformer --max-relative-positions`:
architectures, where the relative self-attention goes, its parameters at base size, bad options.
(Padding, causality and incremental decoding with beam reorders: the registry's invariant tests,
tests/benchmarks/test_system_invariants.py; the formula: tests/fairseq_mgsa/modules/relative/test_attention.py.)"""

import re

import pytest
import torch
from fairseq import options
from fairseq.modules import MultiheadAttention
from fairseq.tasks.translation import TranslationTask

from fairseq_mgsa import MGSAError
from fairseq_mgsa.modules.hysan.attention import HybridMultiheadAttention
from fairseq_mgsa.modules.hysan.relative import RelativeHybridMultiheadAttention
from fairseq_mgsa.modules.relative.attention import RelativeMultiheadAttention
from tests.fairseq_mgsa.models.test_hysan_model import PAD, TINY, USER_DIR, count, make_dict, sentence_batch

HYSAN_TINY = ["--hysan-gate-reduction", "4"]  # the squeeze gate at width 16


def parse(arch, *extra, tiny=False):
    gate = HYSAN_TINY if tiny and arch.startswith("hysan") else []
    return options.parse_args_and_arch(options.get_training_parser(), [
        "unused-data", "--user-dir", USER_DIR, "--arch", arch, *(TINY + gate if tiny else []), *extra])


def build(arch, *extra, tiny=True, vocab=20):
    args = parse(arch, *extra, tiny=tiny)
    d = make_dict(vocab)
    torch.manual_seed(0)
    return TranslationTask(args, d, d).build_model(args).eval()


def test_architectures_sizes_and_defaults():
    for arch, dim, ffn, heads in (("relative_transformer", 512, 2048, 8), ("relative_transformer_big", 1024, 4096, 16),
                                  ("relative_transformer_iwslt_de_en", 512, 1024, 4)):
        args = parse(arch)
        assert (args.encoder_embed_dim, args.encoder_ffn_embed_dim, args.encoder_attention_heads) == (dim, ffn, heads)
        assert args.max_relative_positions == 16
    assert parse("relative_transformer", "--max-relative-positions", "4").max_relative_positions == 4
    assert parse("hysan_transformer_recommended").max_relative_positions == 0


def self_attentions(model):
    encoder = [layer.self_attn for layer in model.encoder.layers]
    decoder = [layer.self_attn for layer in model.decoder.layers]
    return encoder, decoder


def test_every_self_attention_and_no_cross_attention_is_relative():
    model = build("relative_transformer", "--max-relative-positions", "3")
    encoder, decoder = self_attentions(model)
    assert all(type(a) is RelativeMultiheadAttention and a.relative.max_distance == 3 for a in encoder + decoder)
    assert all(type(layer.encoder_attn) is MultiheadAttention for layer in model.decoder.layers)
    assert model.encoder.embed_positions is not None  # absolute positions unless fairseq's option says no
    assert build("relative_transformer", "--no-token-positional-embeddings").encoder.embed_positions is None


def test_hysan_option_reaches_every_self_attention():
    off = build("hysan_transformer")
    assert not any(isinstance(m, (RelativeHybridMultiheadAttention, RelativeMultiheadAttention)) for m in off.modules())
    # HySAN in encoder layer 1 only and a global-only decoder: the other layers get fairseq's layer, relative
    model = build("hysan_transformer", "--max-relative-positions", "2", "--hysan-encoder-layers", "1",
                  "--hysan-decoder-branches", "global")
    encoder, decoder = self_attentions(model)
    assert type(encoder[0]) is RelativeHybridMultiheadAttention and isinstance(encoder[0], HybridMultiheadAttention)
    assert [type(a) for a in encoder[1:] + decoder] == [RelativeMultiheadAttention] * 3
    assert all(a.relative.max_distance == 2 for a in encoder + decoder)


def test_relative_tables_are_the_only_extra_parameters_at_base_size():
    """2 (2k + 1) d_head per self-attention (one table pair per layer, shared by its heads): 12 at base size."""
    k, d_head, layers = 16, 512 // 8, 12
    extra = layers * 2 * (2 * k + 1) * d_head
    assert count(build("relative_transformer", tiny=False)) - count(build("transformer", tiny=False)) == extra
    assert count(build("hysan_transformer_recommended", "--max-relative-positions", "16", tiny=False)) - \
        count(build("hysan_transformer_recommended", tiny=False)) == extra


@pytest.mark.parametrize("arch, extra, message", [
    ("relative_transformer", ["--max-relative-positions", "0"], "--max-relative-positions 0: expected a clipping"),
    ("hysan_transformer", ["--max-relative-positions", "-1"], "--max-relative-positions -1: expected 0 (off)"),
    ("relative_transformer", ["--cross-self-attention"], "--cross-self-attention cannot be combined with relative"),
    ("hysan_transformer", ["--max-relative-positions", "4", "--hysan-decoder-branches", "global",
                           "--cross-self-attention"], "--cross-self-attention cannot be combined with relative"),
])
def test_bad_options_stop_at_argument_parsing(arch, extra, message):
    with pytest.raises(MGSAError, match=re.escape(message)):
        parse(arch, *extra, tiny=True)


def test_decoder_step_equals_full_forward_in_a_built_model():
    """The decoder's last step, incrementally, against the teacher-forced forward (no absolute positions)."""
    model = build("relative_transformer", "--no-token-positional-embeddings", "--max-relative-positions", "2")
    torch.manual_seed(4)
    src = torch.randint(4, 20, (2, 6))
    prev = torch.randint(4, 20, (2, 5))
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=torch.tensor([6, 6]))
        full, _ = model.decoder(prev, encoder_out=enc)
        state = {}
        for t in range(prev.size(1)):
            step, _ = model.decoder(prev[:, :t + 1], encoder_out=enc, incremental_state=state)
            torch.testing.assert_close(step[:, 0], full[:, t], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch, extra", [
    ("relative_transformer", []),
    ("hysan_transformer", ["--max-relative-positions", "2", "--hysan-decoder-branches", "global"]),
    ("hysan_transformer", ["--max-relative-positions", "2"]),
], ids=["relative", "hysan-global-decoder", "hysan"])
def test_a_left_padded_target_trains_and_gives_each_sentence_its_own_output(arch, extra):
    """--left-pad-target: the decoder's padding queries see only padded keys under the causal
    mask. A training forward and backward stay finite (it was NaN from the first update), and each
    sentence's outputs equal its own alone."""
    model = build(arch, *extra).train()  # dropout 0 (TINY)
    src_lengths, tgt_lengths = [7, 4, 1, 3], [5, 2, 4, 3]
    sents, src = sentence_batch("left", src_lengths)
    tgt_sents, prev = sentence_batch("left", tgt_lengths, seed=4)
    real = prev.ne(PAD)
    out = model(src, torch.tensor(src_lengths), prev)[0]
    assert torch.isfinite(out).all()
    out[real].logsumexp(-1).sum().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    t = prev.size(1)
    with torch.no_grad():
        for b, (s, m) in enumerate(zip(sents, tgt_lengths)):
            alone = model(s[None], torch.tensor([len(s)]), prev[b:b + 1, t - m:])[0][0]
            torch.testing.assert_close(out[b, t - m:], alone, atol=1e-5, rtol=1e-5)
