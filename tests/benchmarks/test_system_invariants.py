"""Every registered system, as a whole model on a real batch of the grammar corpus: incremental
decoding with beam reorders (copies, drops, a finished sentence) equals the full forward, and a
sentence's scores do not depend on how its batch is padded; in float32 and in float16 (.half()
on the CPU). The same code (benchmarks/gpu_check/invariants.py) runs on the GPU in
scripts/gpu_check.sh."""

import pytest
import torch

from benchmarks.gpu_check import invariants
from fairseq_mgsa import systems as registry
from tests.fairseq_runs import TINY, USER_DIR, make_data_bin


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
