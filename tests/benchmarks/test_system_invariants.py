"""Every registered system, as a whole model on a real batch of the grammar corpus: incremental
decoding with beam reorders (copies, drops, a finished sentence) equals the full forward, a
sentence's scores do not depend on how its batch is padded, and one training step's gradients
in the float type are those of the same step in float32; in float32 and in float16 (.half() on
the CPU). The same code (tests/gpu/check/invariants.py) runs on the GPU in
scripts/gpu_check.sh."""

import pytest
import torch

from fairseq_mgsa import systems as registry
from tests.fairseq_runs import TINY, USER_DIR, make_data_bin
from tests.gpu.check import invariants


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return str(make_data_bin(tmp_path_factory.mktemp("invariants")))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("system", [s.name for s in registry.distinct_models()])  # TINY fixes the layers
def test_incremental_decoding_and_padding_invariance(data_bin, system, dtype):
    s = registry.get(system)
    result = invariants.check(s.train_args("base") + TINY, data_bin, USER_DIR, torch.device("cpu"),
                              invariants.DTYPES[dtype], sentences=4, steps=6)
    tol = invariants.TOLERANCE[invariants.DTYPES[dtype]]
    assert result["padding"] <= tol, result
    assert result["incremental"] <= tol, result
    assert result["backward"] <= invariants.GRADIENT_TOLERANCE[invariants.DTYPES[dtype]], result
    assert result["backward_cosine"] >= invariants.MIN_COSINE, result
    if dtype == "float32":  # the same step twice: only the order of summation may differ
        assert result["backward"] <= 1e-6, result
    assert result["pass"]


def test_the_checks_see_a_wrong_beam_reorder(data_bin, monkeypatch):
    """A decoder whose incremental state is reordered wrongly (rows taken in reverse) must fail."""
    from fairseq.models.transformer import TransformerDecoderBase

    reorder = TransformerDecoderBase.reorder_incremental_state_scripting
    monkeypatch.setattr(TransformerDecoderBase, "reorder_incremental_state_scripting",
                        lambda self, state, order: reorder(self, state, order.flip(0)))
    result = invariants.check(registry.get("transformer").train_args("base") + TINY, data_bin, USER_DIR,
                              torch.device("cpu"), torch.float32, sentences=4, steps=6)
    assert result["incremental"] > 100 * invariants.TOLERANCE[torch.float32]
    assert not result["pass"]


def test_the_checks_see_padding_that_leaks(data_bin, monkeypatch):
    """An encoder that attends to padded source positions must fail the padding check."""
    from fairseq.models.transformer import TransformerEncoderBase

    forward = TransformerEncoderBase.forward_scriptable

    def leaky(self, src_tokens, src_lengths=None, return_all_hiddens=False, token_embeddings=None):
        out = forward(self, src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        out["encoder_padding_mask"] = [torch.zeros_like(out["encoder_padding_mask"][0])]
        return out

    monkeypatch.setattr(TransformerEncoderBase, "forward_scriptable", leaky)
    result = invariants.check(registry.get("transformer").train_args("base") + TINY, data_bin, USER_DIR,
                              torch.device("cpu"), torch.float32, sentences=4, steps=6)
    assert result["padding"] > 100 * invariants.TOLERANCE[torch.float32]


def test_the_checks_see_a_wrong_half_precision_backward(data_bin, monkeypatch):
    """A backward that goes wrong in float16 only (the output projection's input gradient doubled,
    as a kernel of one float type might) must fail the backward check, and not the others."""
    from fairseq.models.transformer import TransformerDecoderBase

    class DoubledInHalf(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2 if grad.dtype == torch.float16 else grad

    output_layer = TransformerDecoderBase.output_layer
    monkeypatch.setattr(TransformerDecoderBase, "output_layer",
                        lambda self, features: output_layer(self, DoubledInHalf.apply(features)))
    result = invariants.check(registry.get("transformer").train_args("base") + TINY, data_bin, USER_DIR,
                              torch.device("cpu"), torch.float16, sentences=4, steps=6)
    assert result["backward"] > 10 * invariants.GRADIENT_TOLERANCE[torch.float16], result
    assert result["padding"] <= invariants.TOLERANCE[torch.float16]
    assert not result["pass"]
