"""The phrase-interaction recurrence with a hand-written backward: what interaction.py's
modules run by default.

    xg  Gr x B x P x K   the input projections of every step (computed before, in one product)
    W   Gr x K x D       the recurrent weights
    H   Gr x B x P x D   the hidden states

Recorded by autograd, a step of the ON-LSTM is some 56 operators forward and backward; at the
benchmark's batches a GPU update is bound by launches, and the steps were most of MG-SA's
extra operators. Here the whole recurrence, every step of every granularity, is one operator
forward and one backward (recurrence_loops.py: one persistent Triton kernel each way on a GPU,
the step loop in torch on the CPU), and W's gradient one batched product over every step
after the backward. The forward keeps what the backward needs (each step's pre-activations
and cell state, and the states the products read). The arithmetic is that of the plain
recurrence (StackedRecurrence.forward_reference), which the tests compare it with.
"""

import torch
from torch import Tensor

from . import recurrence_loops  # noqa: F401 (registers the operators)
from .recurrence_cells import ops


DOUBLE_BACKWARD = ("MG-SA's phrase-interaction recurrence has no double backward: its gradient cannot be "
                   "differentiated again (create_graph=True); --mgsa-interaction none has no recurrence")


class Recurrence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xg: Tensor, weight_hh: Tensor, chunk_size: int) -> Tensor:
        # float16 / bfloat16 states as autocast or --fp16 gives them: W cast once, not each step
        w = weight_hh if weight_hh.dtype == xg.dtype else weight_hh.to(xg.dtype)
        if chunk_size:
            out, z, c, h_prev = ops.onlstm_recurrence(xg, w, chunk_size)
        else:
            out, z, c, h_prev = ops.lstm_recurrence(xg, w)
        # saved tensors (not ctx attributes), freed by the backward unless the graph is retained
        ctx.save_for_backward(w, h_prev, z, c)
        ctx.chunk_size, ctx.weight_dtype = chunk_size, weight_hh.dtype
        return out

    @staticmethod
    def backward(ctx, d_out: Tensor):
        w, h_prev, z, c = ctx.saved_tensors
        if ctx.chunk_size:
            d_xg, d_later = ops.onlstm_recurrence_backward(z, c, w, d_out, ctx.chunk_size)
        else:
            d_xg, d_later = ops.lstm_recurrence_backward(z, c, w, d_out)
        if z.size(2) > 1:  # Gr x K x (P-1)B times Gr x (P-1)B x D: every step's product at once
            d_w = torch.bmm(d_later.transpose(1, 2), h_prev)
        else:
            d_w = torch.zeros_like(w)
        d_w = d_w.to(ctx.weight_dtype)
        if torch.is_grad_enabled():  # create_graph=True: the gradients may be differentiated again
            d_xg, d_w = _NoDoubleBackward.apply(d_xg.detach().requires_grad_(), d_w.detach().requires_grad_())
        return d_xg, d_w, None


class _NoDoubleBackward(torch.autograd.Function):
    """The recurrence's gradients under create_graph=True: usable as values, and one clear error
    where they are differentiated (instead of "element 0 of tensors does not require grad")."""

    @staticmethod
    def forward(ctx, d_xg: Tensor, d_w: Tensor):
        return d_xg.clone(), d_w.clone()

    @staticmethod
    def backward(ctx, *_):
        raise RuntimeError(DOUBLE_BACKWARD)


def recurrence(xg: Tensor, weight_hh: Tensor, chunk_size: int = 0) -> Tensor:
    """Hidden states of the LSTM (chunk_size 0) or ON-LSTM over the steps of xg (module docstring)."""
    return Recurrence.apply(xg, weight_hh, chunk_size)
