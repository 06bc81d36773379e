"""HySAN's fusion f(O_1, ..., O_l) of the branch outputs (eq. 12, reconstructed).

    add:     f = sum_i O_i                                  no parameters
    concat:  f = H([O_1; ...; O_l]),  H: Linear(l*d -> d)   the paper's dimension-reducing layer
    gate:    f = sum_i SG_i(O_i) * O_i                       "gated sum", elementwise
    SG(x) = sigmoid(f2(ReLU(f1(x)))),  f1: Linear(d -> max(1, d/r)), f2: back to d   (eq. 13)

Each branch has its own squeeze gate SG_i unless `shared` (one SG per layer). The gates'
weights are kept stacked (f1_weight: g x d/r x d, ...), so that all branches go through one
batched product per layer of the gate instead of one small product per branch: on a GPU,
where a training step at base size is bound by the number of kernels it launches, that
loop cost more than the gates' arithmetic. Checkpoints of the earlier per-branch layout
(gates.<i>.f1.weight, ...) load into the stacked one.

The per-branch gated sum has a hand-written backward (GatedSum): autograd's adds the two
gradients reaching the branch outputs (through the gate and through the product) in an
operator of its own and gives the gate weights' gradients transposed, which the gradient
accumulation then copies into the weights' layout: 5 operators more per layer than the 10 of
the hand-written one (`gated_sum`). use_fast_path=False (or a shared gate) runs the plain
autograd computation (`gated_sum_ref`), which the tests compare it with.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from ...errors import MGSAError

FUSIONS = ("add", "concat", "gate")
GATE_PARAMETERS = {"f1_weight": ("f1", "weight"), "f1_bias": ("f1", "bias"),
                   "f2_weight": ("f2", "weight"), "f2_bias": ("f2", "bias")}


class GatedSum(torch.autograd.Function):
    """sum_i sigmoid(f2_i(relu(f1_i(x_i)))) * x_i over the branches i, one gate per branch.
    x: l x N x d; w1: l x h x d, b1: l x h; w2: l x d x h, b2: l x d -> N x d."""

    @staticmethod
    def forward(ctx, x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
        # as the reference computes it (autocast, where on, casts the products' operands)
        hidden = torch.relu(torch.baddbmm(b1.unsqueeze(1), x, w1.transpose(1, 2)))
        gates = torch.sigmoid(torch.baddbmm(b2.unsqueeze(1), hidden, w2.transpose(1, 2)))
        ctx.save_for_backward(x, w1, w2, hidden, gates)
        return (gates * x).sum(0)

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out: Tensor):
        x, w1, w2, hidden, gates = ctx.saved_tensors
        dt = hidden.dtype  # the products' dtype in the forward
        d_out = d_out.unsqueeze(0)  # 1 x N x d, the same for every branch
        d_a2 = torch.ops.aten.sigmoid_backward(d_out * x, gates)  # l x N x d, before the sigmoid
        d_w2 = torch.bmm(d_a2.transpose(1, 2).to(dt), hidden)  # l x d x h: the weight's own layout
        d_a1 = torch.ops.aten.threshold_backward(torch.bmm(d_a2.to(dt), w2.to(dt)), hidden, 0)
        d_w1 = torch.bmm(d_a1.transpose(1, 2), x.to(dt))  # l x h x d
        # the gradient through the product and the one through the gate, in one operator
        d_x = torch.baddbmm((d_out * gates).to(dt), d_a1, w1.to(dt)).to(x.dtype)
        return (d_x, d_w1.to(w1.dtype), d_a1.sum(1).to(w1.dtype), d_w2.to(w2.dtype),
                d_a2.sum(1).to(w2.dtype))


def gated_sum(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
    """GatedSum: one gate per branch, the hand-written backward."""
    return GatedSum.apply(x, w1, b1, w2, b2)


def gated_sum_ref(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
    """The gated sum recorded by autograd, gated_sum's reference; one gate (w1: 1 x h x d, ...)
    is shared by every branch. x: l x N x d -> N x d."""
    if w1.size(0) == 1:  # shared: one product over every branch's rows
        hidden = torch.relu(F.linear(x, w1[0], b1[0]))
        gates = torch.sigmoid(F.linear(hidden, w2[0], b2[0]))
    else:  # one batched product over the branches, each with its own gate
        hidden = torch.relu(torch.baddbmm(b1.unsqueeze(1), x, w1.transpose(1, 2)))
        gates = torch.sigmoid(torch.baddbmm(b2.unsqueeze(1), hidden, w2.transpose(1, 2)))
    return (gates * x).sum(0)


class SqueezeGate(nn.Module):
    """SG(x) = sigmoid(f2(ReLU(f1(x)))): squeeze d -> d/r, restore d/r -> d, gate in (0, 1).
    One gate on its own; BranchFusion keeps the gates of a layer stacked."""

    def __init__(self, dim: int, reduction: int):
        super().__init__()
        if reduction < 1:
            raise MGSAError(f"HySAN squeeze gate: reduction ratio {reduction}, expected r >= 1")
        # at least one hidden unit when the width is below r (small test models), as
        # squeeze-and-excitation implementations do
        hidden = max(1, dim // reduction)
        self.f1 = nn.Linear(dim, hidden)
        self.f2 = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return torch.sigmoid(self.f2(torch.relu(self.f1(x))))


class BranchFusion(nn.Module):
    def __init__(self, fusion: str, num_branches: int, dim: int, gate_reduction: int = 64,
                 gate_shared: bool = False, use_fast_path: bool = True):
        super().__init__()
        if fusion not in FUSIONS:
            raise ValueError(f"unknown HySAN fusion {fusion!r}, expected one of {', '.join(FUSIONS)}")
        self.kind = fusion
        self.num_branches = num_branches
        self.use_fast_path = use_fast_path  # gated_sum for per-branch gates; False: gated_sum_ref
        if fusion == "concat":
            self.reduce = nn.Linear(num_branches * dim, dim)  # H
            nn.init.xavier_uniform_(self.reduce.weight)
            nn.init.zeros_(self.reduce.bias)
        elif fusion == "gate":
            # initialised as separate gates were (nn.Linear's initialisation, in the same order)
            gates = [SqueezeGate(dim, gate_reduction) for _ in range(1 if gate_shared else num_branches)]
            for name, (layer, p) in GATE_PARAMETERS.items():
                stacked = torch.stack([getattr(getattr(g, layer), p).detach() for g in gates])
                self.register_parameter(name, nn.Parameter(stacked))

    @property
    def fast(self) -> bool:
        """use_fast_path's earlier name (scripts set it after construction)."""
        return self.use_fast_path

    @fast.setter
    def fast(self, value: bool):
        self.use_fast_path = value

    @property
    def num_gates(self) -> int:
        return self.f1_weight.size(0) if self.kind == "gate" else 0

    def forward(self, outputs: Tensor) -> Tensor:
        """outputs: l x T x B x d, each branch's concatenated heads -> T x B x d."""
        branches, tgt_len, bsz, dim = outputs.shape
        assert branches == self.num_branches
        if self.kind == "add":
            return outputs.sum(0)
        if self.kind == "concat":
            return self.reduce(outputs.permute(1, 2, 0, 3).reshape(tgt_len, bsz, branches * dim))
        x = outputs.reshape(branches, tgt_len * bsz, dim)
        op = gated_sum if self.use_fast_path and self.num_gates > 1 else gated_sum_ref
        fused = op(x, self.f1_weight, self.f1_bias, self.f2_weight, self.f2_bias)
        return fused.view(tgt_len, bsz, dim)

    def gate_reference(self, x: Tensor) -> Tensor:
        """The gated sum recorded by autograd (gated_sum_ref). x: l x N x d -> N x d."""
        return gated_sum_ref(x, self.f1_weight, self.f1_bias, self.f2_weight, self.f2_bias)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the earlier layout, one SqueezeGate module per branch: gates.<i>.f1.weight, ...
        if self.kind == "gate" and f"{prefix}gates.0.f1.weight" in state_dict:
            for name, (layer, p) in GATE_PARAMETERS.items():
                old = [f"{prefix}gates.{i}.{layer}.{p}" for i in range(self.num_gates)]
                if all(k in state_dict for k in old):
                    state_dict[prefix + name] = torch.stack([state_dict.pop(k) for k in old])
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return f"{self.kind}, branches={self.num_branches}" + (f", gates={self.num_gates}" if self.kind == "gate" else "")
