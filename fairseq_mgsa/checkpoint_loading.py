"""Loading fairseq checkpoints under torch >= 2.6, whose torch.load defaults to weights_only=True.

fairseq's checkpoint_utils calls torch.load without `weights_only`, and a fairseq
checkpoint holds an argparse.Namespace (its "args") besides tensors and plain
containers. We allow exactly that class with torch's own allow-list instead of
switching the protection off.
"""

import argparse

import torch

if hasattr(torch.serialization, "add_safe_globals"):
    torch.serialization.add_safe_globals([argparse.Namespace])
