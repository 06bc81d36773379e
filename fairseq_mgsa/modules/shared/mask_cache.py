"""Masks built once per batch and shared by the layers of a stack (phrase-based attention, HySAN).

fairseq hands every layer of a stack the same padding mask and attn_mask (the decoder slices its
buffered causal mask anew for each layer: a view of the same memory), so whatever a module derives
from them is the same in every layer. On a GPU each rebuilt mask is a handful of small kernels per
module and update, and an update there is bound by the number of kernels. A cached entry is used
only for the memory it was built from, seen with the same shape and strides (the tensors are held,
so that memory is not reused), and only while the version counters say it was not changed in place.
"""

from typing import Callable, Dict, Optional, Sequence, Tuple

from torch import Tensor, nn


class MaskCache:
    """Results keyed by a signature (sizes, dtype, ...) and valid for the tensors they came from.
    A module that uses one keeps it as `mask_cache`; a model gives one to all such modules of a
    stack (share_mask_cache, called by models/base.py's place_layers); a module alone has its own."""

    MAX_ENTRIES = 16

    def __init__(self):
        self._entries: Dict[tuple, Tuple[tuple, tuple, object]] = {}

    def get(self, signature: tuple, tensors: Sequence[Optional[Tensor]], build: Callable[[], object]):
        if any(t is not None and t.is_inference() for t in tensors):
            return build()  # inference tensors keep no version counter: nothing to check a hit against
        # the same memory seen the same way, unchanged: fairseq's decoder hands every layer a new
        # slice of one buffered causal mask; the entry holds the tensors, so their memory is not reused
        views = tuple(None if t is None else (t.data_ptr(), t.shape, t.stride(), t.dtype, t.device, t._version)
                      for t in tensors)
        hit = self._entries.get(signature)
        if hit is not None and hit[1] == views:
            return hit[2]
        value = build()
        if len(self._entries) >= self.MAX_ENTRIES:
            self._entries.clear()
        self._entries[signature] = (tuple(tensors), views, value)
        return value


def share_mask_cache(stack: nn.Module) -> MaskCache:
    """One MaskCache for every module of `stack` that keeps one (a `mask_cache` attribute holding
    a MaskCache): the attention modules of a model's encoder, or of its decoder, share it."""
    cache = MaskCache()
    for module in stack.modules():
        if isinstance(getattr(module, "mask_cache", None), MaskCache):
            module.mask_cache = cache
    return cache
