"""The attention weights of a model's own modules, asked for the fairseq way: forward hooks that
call every attention module with need_weights / need_head_weights (no second implementation),
and, from every method's module, what it keeps through the one interface they all implement
(modules/shared/extra_weights.py): nothing here knows a method."""

from functools import partial
from typing import Dict, List

import torch
import torch.nn as nn
from fairseq.modules import MultiheadAttention

from ...modules.shared.extra_weights import ExtraAttentionWeights, KeptWeights, token_level_weights, weights_from_output


class AttentionRecorder:
    """Within `with`, every module of `modules` (name -> attention module) is called with
    need_weights=True, need_head_weights=True and its weights are kept in `weights[name]`
    (H x B x T x S), over the key tokens in `token_weights[name]` (the same tensor unless the
    module's keys are not tokens); a method's module keeps its own parts too
    (keep_extra_weights), in `kept[name]` (KeptWeights, in the module's order; `extra[name]`:
    their probabilities alone).

    fairseq's MultiheadAttention averages over heads on its fast path
    (F.multi_head_attention_forward) whatever need_head_weights says: its own flag
    skip_embed_dim_check sends it down its regular path, which returns them per head."""

    def __init__(self, modules: Dict[str, nn.Module]):
        self.modules = modules
        self.weights: Dict[str, torch.Tensor] = {}
        self.token_weights: Dict[str, torch.Tensor] = {}
        self.kept: Dict[str, List[KeptWeights]] = {}

    @property
    def extra(self) -> Dict[str, List[torch.Tensor]]:
        return {name: [part.probs for part in parts] for name, parts in self.kept.items()}

    def __enter__(self):
        self.handles, self.restore, self.was_keeping = [], [], {}
        for name, module in self.modules.items():
            self.handles.append(module.register_forward_pre_hook(self.ask_for_weights, with_kwargs=True))
            self.handles.append(module.register_forward_hook(partial(self.keep, name)))
            if isinstance(module, MultiheadAttention):  # fairseq's own class (and its subclasses)
                self.restore.append((module, module.skip_embed_dim_check))
                module.skip_embed_dim_check = True
            if isinstance(module, ExtraAttentionWeights):
                self.was_keeping[name] = module.keeping_extra_weights
                module.keep_extra_weights(True)
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        for module, value in self.restore:
            module.skip_embed_dim_check = value
        for name, was_keeping in self.was_keeping.items():
            self.modules[name].keep_extra_weights(False)  # what it kept goes: the recorder holds it
            self.modules[name].keep_extra_weights(was_keeping)

    @staticmethod
    def ask_for_weights(module, args, kwargs):
        return args, dict(kwargs, need_weights=True, need_head_weights=True)

    def keep(self, name, module, args, output):
        output, weights = weights_from_output(module, output)
        self.weights[name] = weights.detach()
        self.token_weights[name] = token_level_weights(module, self.weights[name])
        if isinstance(module, ExtraAttentionWeights):
            self.kept[name] = [part.detach() for part in module.kept_extra_weights()]
        return output
