"""Half precision: every MG-SA module, forward and backward, in torch.float16 (the module
and its inputs cast with .half(), as fp16 training on a GPU runs them) and in float32
under torch.autocast("cpu", dtype=torch.bfloat16) (mixed precision; fairseq-train --bf16 with the
plugin casts the whole model to bfloat16, tests/end_to_end/test_bf16_commands.py).

Checked against the same module in float32 on the same inputs: outputs, input gradients
and parameter gradients are finite everywhere (padding positions included: masks never
turn a whole row into NaN) and within a stated tolerance (TOLERANCE below; measured
errors were about a third of it): the largest error of the output relative to the
largest float32 output, and of every gradient relative to the largest float32
gradient of the module. Not per gradient tensor: some are zero in exact arithmetic
(the key projection's bias under softmax, whose shift cancels) and are pure rounding
noise in half precision. float16 keeps about 3 significant digits, bfloat16 about 2."""

import copy

import pytest
import torch
import torch.nn.functional as F
from fairseq import options
from fairseq.tasks.translation import TranslationTask

import fairseq_mgsa  # noqa: F401  (registers the model)
from fairseq_mgsa.modules import (
    LSTMCompositions,
    MaxPoolComposition,
    MGSAEncoderLayer,
    MultiGranularitySelfAttention,
    ONLSTMInteraction,
    PhraseMemory,
    SANComposition,
    ngram_partition,
    spans_to_partition,
)
from fairseq_mgsa.modules.mgsa.interaction import LSTMInteraction
from tests.fairseq_runs import TINY, USER_DIR

TOLERANCE = {"float16": (5e-3, 5e-3), "bfloat16": (2e-2, 4e-2)}  # (output, gradients)
C, D = 16, 4  # model width, width of one granularity's heads (16 dims / 4 heads)
LENGTHS = [7, 1, 4]  # tokens with EOS: a one-token sentence (EOS alone) among them


def padding_mask(left=True):
    T = max(LENGTHS)
    mask = torch.ones(len(LENGTHS), T, dtype=torch.bool)
    for b, n in enumerate(LENGTHS):
        if left:
            mask[b, T - n:] = False
        else:
            mask[b, :n] = False
    return mask


def syntactic_partition(mask):
    # word phrases per sentence (EOS excluded): 6 = 2 + 3 + 1, 0, 3 = 1 + 2
    lengths = torch.tensor([[2, 3, 1], [0, 0, 0], [1, 2, 0]])
    return spans_to_partition(lengths, torch.tensor([3, 0, 2]), mask)


def partitions(mask):
    return {"ngram2": ngram_partition(mask, 2), "syn1": syntactic_partition(mask)}


def granularity_phrases(mask):
    """What PhraseMemory hands a composition: the phrase of each token in each of two
    granularities (3-grams and 2-grams), Gr x B x T (-1 at padding), and the phrase slots P."""
    parts = [ngram_partition(mask, 3), ngram_partition(mask, 2)]
    return torch.stack([p.phrase_index for p in parts]), max(p.max_phrases for p in parts)


def tiny_encoder_layer():
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        "unused-data", "--user-dir", USER_DIR, "--arch", "mgsa_transformer", *TINY, "--dropout", "0",
        "--mgsa-granularities", "word,ngram2,syn1,syn1", "--mgsa-composition", "san",
        "--mgsa-interaction", "onlstm",
        # fairseq's FFN with a smooth activation: under ReLU, bfloat16 rounding flips the sign of
        # near-zero pre-activations, which moves a whole term of fc1's gradient (seen: 11% of
        # the largest gradient); a kink of fairseq's FFN, not of the MG-SA modules tested here
        "--activation-fn", "gelu"])
    from fairseq.data import Dictionary
    d = Dictionary()
    for i in range(10):
        d.add_symbol(f"w{i}")
    task = TranslationTask(args, d, d)
    task.tag_dictionary = Dictionary()  # what mgsa_translation gives a syntactic model
    model = task.build_model(args)
    layer = model.encoder.layers[0]
    assert isinstance(layer, MGSAEncoderLayer)
    return layer


# name -> (module factory, inputs(mask) -> tensors that get gradients + extras, forward)
def composition_case(factory, all_at_once):
    def inputs(mask):
        return [torch.randn(*mask.shape, C)], granularity_phrases(mask)

    def forward(m, xs, extra):
        phrase_index, P = extra
        if all_at_once:
            return m.forward_all(xs[0], phrase_index, P)
        # one granularity at a time on the flat token axis, padding in the last slot (dropped)
        B, T = phrase_index.shape[1:]
        index = (phrase_index + (torch.arange(B) * P).unsqueeze(1)).masked_fill(phrase_index < 0, B * P)
        tokens = xs[0].reshape(B * T, C)
        return torch.stack([m(tokens, idx.view(-1), B * P + 1, j)[:-1] for j, idx in enumerate(index)])

    return factory, inputs, forward


def interaction_case(factory):
    def inputs(mask):
        parts = [ngram_partition(mask, 2), ngram_partition(mask, 3)]
        P = max(p.max_phrases for p in parts)
        real = torch.stack([F.pad(~p.phrase_padding_mask(), (0, P - p.max_phrases)) for p in parts])  # Gr x B x P
        g = torch.randn(len(parts), mask.size(0), P, C) * real.unsqueeze(-1)
        return [g], ([p.max_phrases for p in parts],)

    return factory, inputs, lambda m, xs, extra: m(xs[0], *extra)


def memory_case(composition, interaction):
    def inputs(mask):
        return [torch.randn(*mask.shape, C)], (list(partitions(mask).values()),)

    return (lambda: PhraseMemory(2, C, D, composition, interaction, 2), inputs,
            lambda m, xs, extra: torch.cat([t.reshape(-1) for t in m(xs[0], *extra)]))


def attention_inputs(mask):
    return [torch.randn(mask.size(1), mask.size(0), C)], (mask, partitions(mask))


CASES = {
    **{f"composition-{name}{'-all' if all_at_once else ''}": composition_case(factory, all_at_once)
       for name, factory in (("max", MaxPoolComposition), ("san", lambda: SANComposition(2, C, D)),
                             ("lstm", lambda: LSTMCompositions(2, C, D)))
       for all_at_once in (False, True)},
    "interaction-lstm": interaction_case(lambda: LSTMInteraction(2, C, D)),
    "interaction-onlstm": interaction_case(lambda: ONLSTMInteraction(2, C, D, 2)),
    # partition -> composition -> interaction, on an n-gram and a syntactic partition at once
    "phrase-memory-san-onlstm": memory_case("san", "onlstm"),
    "phrase-memory-lstm-lstm": memory_case("lstm", "lstm"),
    "mgsa-attention": (
        lambda: MultiGranularitySelfAttention(C, 4, ["word", "ngram2", "syn1", "syn1"], "san", "onlstm"),
        attention_inputs, lambda m, xs, extra: m(xs[0], extra[0], extra[1])[0]),
    "encoder-layer": (tiny_encoder_layer, attention_inputs, lambda m, xs, extra: m(xs[0], extra[0], extra[1])[0]),
}


def run(module, xs, extra, forward, weight=None):
    """Forward, then backward of a fixed random projection of the output; returns (out, grads)."""
    out = forward(module, xs, extra)
    if weight is None:
        weight = torch.randn(out.shape)
    (out.float() * weight).sum().backward()
    grads = {f"input{i}": x.grad for i, x in enumerate(xs)}
    grads.update({n: p.grad for n, p in module.named_parameters() if p.grad is not None})
    return out, grads, weight


def cast_inputs(xs, dtype):
    return [x.detach().to(dtype).requires_grad_() for x in xs]


def assert_close(name, got, ref, tol, scale):
    got = got.float()
    assert torch.isfinite(got).all(), f"{name}: not finite"
    err = (got - ref).abs().max().item()
    assert err <= tol * scale, f"{name}: max error {err:.3g}, {err / scale:.3g} of the float32 scale {scale:.3g}"


@pytest.mark.parametrize("left", [True, False], ids=["left-pad", "right-pad"])
@pytest.mark.parametrize("mode", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", list(CASES))
def test_half_precision_forward_backward_close_to_float32(case, mode, left):
    factory, make_inputs, forward = CASES[case]
    torch.manual_seed(0)
    module = factory()
    module.eval()  # no dropout: the three runs must see the same function
    mask = padding_mask(left)
    xs, extra = make_inputs(mask)
    ref_out, ref_grads, weight = run(copy.deepcopy(module), cast_inputs(xs, torch.float32), extra, forward)
    assert torch.isfinite(ref_out).all()

    if mode == "float16":
        half = copy.deepcopy(module).half()
        out, grads, _ = run(half, cast_inputs(xs, torch.float16), extra, forward, weight)
        assert out.dtype == torch.float16
    else:
        m = copy.deepcopy(module)
        inputs = cast_inputs(xs, torch.float32)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = forward(m, inputs, extra)
        (out.float() * weight).sum().backward()
        grads = {f"input{i}": x.grad for i, x in enumerate(inputs)}
        grads.update({n: p.grad for n, p in m.named_parameters() if p.grad is not None})

    out_tol, grad_tol = TOLERANCE[mode]
    assert_close("output", out, ref_out, out_tol, ref_out.abs().max().item())
    assert ref_grads.keys() == grads.keys()
    grad_scale = max(g.abs().max().item() for g in ref_grads.values())
    assert grad_scale > 0
    for name, g in grads.items():
        assert_close(f"gradient of {name}", g, ref_grads[name], grad_tol, grad_scale)


def test_partitions_do_not_depend_on_the_float_type():
    """Partitions are integer maps from the padding mask alone: the same under any precision."""
    mask = padding_mask()
    assert ngram_partition(mask, 2).phrase_index.dtype == torch.long
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = syntactic_partition(mask)
    assert torch.equal(inside.phrase_index, syntactic_partition(mask).phrase_index)
