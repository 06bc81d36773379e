"""The attention weights of a model's own modules, asked for the fairseq way: forward hooks that
call every attention module with need_weights / need_head_weights (no second implementation)."""

from functools import partial
from typing import Dict, List

import torch
import torch.nn as nn
from fairseq.modules import MultiheadAttention

from ...modules.hysan.attention import HybridMultiheadAttention
from ...modules.mgsa.attention import MultiGranularitySelfAttention
from ...modules.pba.attention import PhraseBasedAttention


class AttentionRecorder:
    """Within `with`, every module of `modules` (name -> attention module) is called with
    need_weights=True, need_head_weights=True and its weights are kept in `weights[name]`
    (H x B x T x S); PBA's per-n-gram and HySAN's per-branch probabilities in `extra[name]`.

    fairseq's MultiheadAttention averages over heads on its fast path
    (F.multi_head_attention_forward) whatever need_head_weights says: its own flag
    skip_embed_dim_check sends it down its regular path, which returns them per head."""

    FLAGS = {MultiheadAttention: "skip_embed_dim_check", PhraseBasedAttention: "keep_ngram_weights",
             HybridMultiheadAttention: "keep_branch_weights"}

    def __init__(self, modules: Dict[str, nn.Module]):
        self.modules = modules
        self.weights: Dict[str, torch.Tensor] = {}
        self.extra: Dict[str, List[torch.Tensor]] = {}

    def __enter__(self):
        self.handles, self.restore = [], []
        for name, module in self.modules.items():
            self.handles.append(module.register_forward_pre_hook(self.ask_for_weights, with_kwargs=True))
            self.handles.append(module.register_forward_hook(partial(self.keep, name)))
            for cls, flag in self.FLAGS.items():
                if isinstance(module, cls):
                    self.restore.append((module, flag, getattr(module, flag, None)))
                    setattr(module, flag, True)
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        for module, flag, value in self.restore:
            setattr(module, flag, value if value is not None else False)
            for attr in ("ngram_weights", "branch_weights"):
                if hasattr(module, attr):
                    delattr(module, attr)

    @staticmethod
    def ask_for_weights(module, args, kwargs):
        return args, dict(kwargs, need_weights=True, need_head_weights=True)

    def keep(self, name, module, args, output):
        if isinstance(module, MultiGranularitySelfAttention):
            out, composed, weights = output  # the third output only when asked for weights
            self.weights[name] = weights.detach()
            return out, composed
        self.weights[name] = output[1].detach()
        if isinstance(module, PhraseBasedAttention):
            self.extra[name] = [p.detach() for p in module.ngram_weights]
        elif isinstance(module, HybridMultiheadAttention):
            H = module.num_heads
            self.extra[name] = [p.detach().view(-1, H, *p.shape[1:]) for p in module.branch_weights]
        return output
