"""Which module runs an operator, forward and backward: `python -m benchmarks.op_counts --by-module`'s breakdown.

Forward: the innermost module whose forward is running (global module hooks keep a stack).
Backward: the module whose forward made the autograd node being run. When a module's forward
returns, every node reachable from its outputs that was made since it began (autograd's sequence
numbers) and is not yet claimed by a module inside it is tagged with its name (node.metadata),
innermost first. Nodes made outside any module (the loss's own arithmetic, the optimizer) and
gradient accumulation into the parameters are named by their autograd class. Names have their
layer numbers replaced by *, so that the layers of a stack add up.
"""

import re

import torch
from torch.nn.modules import module as nn_module
from torch.utils._pytree import tree_leaves

KEY = "op_counts_module"


class ModuleSites:
    def __init__(self, *roots):
        """roots: the modules whose submodules are told apart (the model, the criterion)."""
        self.names = {m: re.sub(r"\.\d+(?=\.|$)", ".*", f"{type(root).__name__}.{n}" if n else type(root).__name__)
                      for root in roots for n, m in root.named_modules()}
        self.stack = []  # (name, sequence number at its start)
        self._handles = []

    def __enter__(self):
        self._handles = [nn_module.register_module_forward_pre_hook(self._enter),
                         nn_module.register_module_forward_hook(self._leave, always_call=True)]
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []

    def _enter(self, module, args):
        name = self.names.get(module)
        if name is not None:
            self.stack.append((name, torch._C._autograd._get_sequence_nr()))

    def _leave(self, module, args, output):
        name = self.names.get(module)
        if name is None or not self.stack:
            return
        name, start = self.stack.pop()
        todo = [t.grad_fn for t in tree_leaves(output) if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        seen = set()
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if node._sequence_nr() < start or node.name() == "torch::autograd::AccumulateGrad":
                continue
            node.metadata.setdefault(KEY, name)
            todo += [n for n, _ in node.next_functions]

    def where(self):
        """The module running the current operator (the forward's innermost one, activation
        checkpointing's recomputation included; in the backward, the node's)."""
        if self.stack:
            return self.stack[-1][0]
        node = torch._C._current_autograd_node()
        if node is None:
            return "(outside any module)"
        return node.metadata.get(KEY) or f"({node.name().split('::')[-1]})"
