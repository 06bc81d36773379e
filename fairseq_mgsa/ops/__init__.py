"""Operators with their own kernels, kept apart from the modules that use them: the
phrase-interaction recurrence of MG-SA (recurrence.py: the autograd operator with its
hand-written backward, the torch step loop and cells, and `recurrence_ref`, the reference;
recurrence_path.py: which path a tensor takes and the registered operators) and its Triton
kernels (triton/). Nothing here imports Triton until a kernel is first needed.
"""

from . import recurrence_path  # noqa: F401,E402  registers the operators before any use
