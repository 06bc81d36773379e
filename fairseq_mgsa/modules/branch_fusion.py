"""HySAN's fusion f(O_1, ..., O_l) of the branch outputs (eq. 12, reconstructed).

    add:     f = sum_i O_i                                  no parameters
    concat:  f = H([O_1; ...; O_l]),  H: Linear(l*d -> d)   the paper's dimension-reducing layer
    gate:    f = sum_i SG_i(O_i) * O_i                       "gated sum", elementwise
    SG(x) = sigmoid(f2(ReLU(f1(x)))),  f1: Linear(d -> max(1, d/r)), f2: back to d   (eq. 13)

Each branch has its own squeeze gate SG_i unless `shared` (one SG per layer).
"""

from typing import List

import torch
import torch.nn as nn
from torch import Tensor

from ..errors import MGSAError

FUSIONS = ("add", "concat", "gate")


class SqueezeGate(nn.Module):
    """SG(x) = sigmoid(f2(ReLU(f1(x)))): squeeze d -> d/r, restore d/r -> d, gate in (0, 1)."""

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
                 gate_shared: bool = False):
        super().__init__()
        if fusion not in FUSIONS:
            raise ValueError(f"unknown HySAN fusion {fusion!r}, expected one of {', '.join(FUSIONS)}")
        self.kind = fusion
        self.num_branches = num_branches
        if fusion == "concat":
            self.reduce = nn.Linear(num_branches * dim, dim)  # H
            nn.init.xavier_uniform_(self.reduce.weight)
            nn.init.zeros_(self.reduce.bias)
        elif fusion == "gate":
            self.gates = nn.ModuleList(
                [SqueezeGate(dim, gate_reduction) for _ in range(1 if gate_shared else num_branches)])

    def forward(self, outputs: List[Tensor]) -> Tensor:
        """outputs: l tensors T x B x d (each branch's concatenated heads) -> T x B x d."""
        assert len(outputs) == self.num_branches
        if self.kind == "add":
            return torch.stack(outputs).sum(0) if len(outputs) > 1 else outputs[0]
        if self.kind == "concat":
            return self.reduce(torch.cat(outputs, dim=-1))
        fused = None
        for i, o in enumerate(outputs):
            gated = self.gates[i % len(self.gates)](o) * o
            fused = gated if fused is None else fused + gated
        return fused

    def extra_repr(self) -> str:
        return f"{self.kind}, branches={self.num_branches}"
