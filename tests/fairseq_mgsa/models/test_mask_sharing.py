"""The models whose attention derives masks from fairseq's padding and causal masks (PBA, HySAN)
build them once per batch and stack: one MaskCache (modules/shared/mask_cache.py) shared by every
attention module of the encoder, another by the decoder's (models/base.py, place_layers)."""

import pytest
import torch

from fairseq_mgsa.modules.shared.mask_cache import MaskCache

from tests.fairseq_mgsa.models.test_model import build

ARCHS = ["pba_transformer", "hysan_transformer"]


def caches(stack):
    return {id(m.mask_cache) for m in stack.modules() if isinstance(getattr(m, "mask_cache", None), MaskCache)}


def builds_per_forward(arch, layers, monkeypatch):
    """How many masks a training forward builds, for a model of `layers` layers per stack; and
    how many more a second batch (new padding masks, as fairseq makes them) builds."""
    model, _ = build(["--encoder-layers", str(layers), "--decoder-layers", str(layers)], arch=arch)
    for stack in (model.encoder, model.decoder):
        assert len(caches(stack)) == 1  # one cache for all the stack's attention modules
    assert caches(model.encoder) != caches(model.decoder)
    built = []
    get = MaskCache.get
    monkeypatch.setattr(MaskCache, "get", lambda self, key, tensors, make: get(
        self, key, tensors, lambda: built.append(key) or make()))
    src = torch.tensor([[1, 5, 6, 2], [7, 8, 9, 2]])
    prev = torch.tensor([[2, 5, 6, 1], [2, 7, 8, 9]])
    model.train()
    model(src, torch.tensor([3, 4]), prev)
    first = len(built)
    model(src, torch.tensor([3, 4]), prev.clone())
    return first, len(built) - first


@pytest.mark.parametrize("arch", ARCHS)
def test_masks_are_built_once_per_batch_and_stack(arch, monkeypatch):
    one_layer = builds_per_forward(arch, 1, monkeypatch)
    monkeypatch.undo()
    three_layers = builds_per_forward(arch, 3, monkeypatch)
    # whatever the number of layers: each stack's masks once for the batch, all again for the next
    assert three_layers == one_layer
    assert one_layer[0] >= 2 and one_layer[1] == one_layer[0]
