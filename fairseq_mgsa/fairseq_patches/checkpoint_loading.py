"""Loading fairseq checkpoints under torch >= 2.6, whose torch.load defaults to weights_only=True.

fairseq's checkpoint_utils calls torch.load without `weights_only`. Besides tensors,
plain containers (dict, list, OrderedDict) and numbers, which torch's allow-list
holds already, a fairseq checkpoint can hold, read from fairseq's own code:

* argparse.Namespace: "args" of old checkpoints, and "cfg"["model"] of every model
  configured through argparse (fairseq's `transformer`, our `mgsa_transformer`);
* numpy arrays, in "extra_state"["metrics"] (trainer.state_dict): the state of every
  meter logged during training. The translation task's --eval-bleu logs the BLEU
  n-gram counts as arrays (`metrics.log_scalar("_bleu_counts", np.array(counts))`);
  an AverageMeter keeps the last value and the running sum, both arrays. Their dtype is
  an integer (int64; int32 where numpy's default int is 32 bits) or float64 (fairseq's
  stat sync turns logged numbers into float64 tensors before they are summed).
  Every other meter value is a Python number or a torch tensor; the remaining entries
  (train_iterator, val_loss, best, lr_scheduler and optimizer states, EMA weights)
  are numbers, tensors and containers.

We add exactly these classes to torch's allow-list instead of switching the
protection off. An array is pickled as a call of numpy's `_reconstruct` on
`ndarray` and a `dtype`, whose state is then set on an instance of the dtype's own
class (numpy >= 1.25: `numpy.dtypes.Int64DType` ...), so those classes are listed
too. numpy 2 moved `numpy.core` to `numpy._core`: a checkpoint written under either
names the function by the module of its time, so both names are allowed.

This file needs only torch, numpy and argparse: examples/common/average_checkpoints.py
loads it by path, without importing fairseq.
"""

import argparse

import numpy as np
import torch

# dtypes of the arrays fairseq's meters can hold (see above)
ARRAY_DTYPES = ("int32", "int64", "float64")


def safe_globals():
    """The allow-list entries: classes and functions, or (function, pickled name) pairs."""
    reconstruct = np.zeros(1).__reduce__()[0]  # numpy's _reconstruct, wherever this numpy keeps it
    entries = [argparse.Namespace, np.ndarray, np.dtype]
    entries += sorted({type(np.dtype(name)) for name in ARRAY_DTYPES} - {np.dtype}, key=lambda t: t.__name__)
    entries += [(reconstruct, f"{module}.multiarray._reconstruct") for module in ("numpy.core", "numpy._core")]
    return entries


def allow_fairseq_checkpoints():
    if not hasattr(torch.serialization, "add_safe_globals"):  # torch < 2.4: nothing to allow
        return
    entries = safe_globals()
    try:
        torch.serialization.add_safe_globals(entries)
    except (TypeError, ValueError, AttributeError):  # a torch without (function, name) entries
        torch.serialization.add_safe_globals([e[0] if isinstance(e, tuple) else e for e in entries])


allow_fairseq_checkpoints()
