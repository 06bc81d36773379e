"""Which path the phrase-interaction recurrence takes for a tensor, the way back when a
Triton kernel fails, and the registered operators that take it. Three paths compute the same
numbers (within the dtype's rounding):

    loop   one persistent Triton kernel each way (triton/recurrence_loop.py): a CUDA tensor of
           float32, float16 or bfloat16, a width D the loop kernel is chosen for (LOOP_MAX_D),
           and a compiled kernel whose shared memory fits the device's per-block limit
    cells  the torch step loop with one fused Triton cell a step (triton/recurrence_cells.py): a
           CUDA tensor of a half type or float32 where the loop kernel is not taken (a wide D,
           too little shared memory)
    torch  the torch step loop with torch cells (recurrence.py): the CPU, float64, a torch
           without Triton, ROCm, MGSA_NO_TRITON=1, or a shape whose Triton kernel failed once

A run never ends on a kernel: a Triton failure (an import, a compilation, a launch, a
resource limit) is logged once as a warning naming the path taken instead and MGSA_NO_TRITON,
and that shape takes the torch path from then on. The path each (direction, device, dtype,
width) takes is logged once, at its first use, with the reason when it is not the loop kernel.

The operators (`torch.ops.mgsa_recurrence.*`): the whole recurrence each way
({lstm,onlstm}_recurrence[_backward], which recurrence.py's autograd operator calls once per
forward and once per backward) and one step's cell each way ({lstm,onlstm}_cell[_backward],
which the torch step loop calls once per step). They are registered operators rather than
Python functions so that what dispatches them sees one operator per call, as a GPU runs one
kernel: a TorchDispatchMode counting operators on the CPU (benchmarks' op counts) then
predicts the GPU's launches. Each picks its own path here, and has a fake implementation
(shapes alone) for torch.compile and torch.library.opcheck.
"""

import importlib
import logging
import os
import sys
from typing import Callable, Dict, Optional, Tuple

import torch
from torch import Tensor

from . import recurrence as _torch  # its torch cells and step loop: the torch path

logger = logging.getLogger(__name__)

# The widest D the loop kernel is chosen for. Past it the kernel holds a gate group of
# BLOCK_B x D float32 values per program and ptxas spills them (docs/gpu.md has the
# measurements per width and GPU class); the per-step cells are then the faster fused path.
LOOP_MAX_D = 256
# tests set this (with TRITON_INTERPRET=1) to run the Triton kernels on CPU tensors
TRITON_ON_CPU = False

# the Triton kernel modules, imported on first use (only where Triton is)
CELL_KERNELS, LOOP_KERNELS = "triton.recurrence_cells", "triton.recurrence_loop"

_modules: Dict[str, object] = {}  # kernel modules once imported, or the import's error text
_failed: Dict[tuple, str] = {}  # shapes whose kernel failed: the torch path from then on
_unfit: Dict[tuple, str] = {}  # shapes whose loop kernel needs more shared memory than the device has
_announced: set = set()  # (key, path) already logged


def _import(name: str):
    """fairseq_mgsa.ops.<name> (a Triton kernel module), or the reason it cannot be had (a string)."""
    if name not in _modules:
        try:
            _modules[name] = importlib.import_module("." + name, __package__)
        except Exception as e:  # noqa: BLE001 (no Triton, a Triton without the 3.x API, a broken install)
            _modules[name] = f"Triton does not import ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    return _modules[name]


def _triton_reason(t: Tensor) -> Optional[str]:
    """Why Triton cannot run on t at all, or None."""
    if os.environ.get("MGSA_NO_TRITON") == "1":
        return "MGSA_NO_TRITON=1"
    if t.is_cuda:
        if getattr(torch.version, "hip", None):
            return "a ROCm build of torch (the kernels are written and tested for NVIDIA GPUs)"
        return None
    if TRITON_ON_CPU and os.environ.get("TRITON_INTERPRET") == "1":
        return None
    return f"a {t.device.type} tensor"


def device_shared_memory(device: torch.device) -> Optional[int]:
    """Shared memory a block may use on a CUDA device (the opt-in maximum), in bytes; None
    elsewhere (Triton's interpreter on the CPU has no such limit)."""
    if device.type != "cuda":
        return None
    props = torch.cuda.get_device_properties(device)
    limit = getattr(props, "shared_memory_per_block_optin", 0)
    if limit:
        return int(limit)
    from triton.runtime import driver  # older torch: ask Triton's driver
    return int(driver.active.utils.get_device_properties(device.index)["max_shared_mem"])


def _announce(key: tuple, path: str, reason: str = ""):
    if (key, path) in _announced:
        return
    _announced.add((key, path))
    direction, device, dtype, width = key
    logger.info("MG-SA recurrence (%s, %s, %s, D=%s): %s%s", direction, device, str(dtype).replace("torch.", ""),
                width, path, f" ({reason})" if reason else "")


def _fail(key: tuple, what: str, error: BaseException, instead: str):
    if key not in _failed:
        _failed[key] = f"{type(error).__name__}: {error}"
        first = str(error).strip().splitlines()
        logger.warning("MG-SA recurrence (%s, %s, %s, D=%s): the %s failed (%s: %s); taking %s for this shape "
                       "from now on (MGSA_NO_TRITON=1 turns every Triton kernel off)", *key, what,
                       type(error).__name__, first[0][:300] if first else "", instead)


def _loop_reason(key: tuple, t: Tensor, width: int) -> Optional[str]:
    """Why the loop kernel is not taken for this key, or None."""
    reason = _triton_reason(t) or _failed.get(key) or _unfit.get(key)
    if reason is None and t.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        reason = f"{str(t.dtype).replace('torch.', '')} has no loop kernel"
    if reason is None and width > LOOP_MAX_D:
        reason = f"D = {width} > {LOOP_MAX_D}: the per-step cells are faster there"
    return reason


def run(direction: str, t: Tensor, width: int, loop: Callable, step_loop: Callable):
    """loop(module) (the persistent kernel, triton/recurrence_loop.py) where it applies to t and
    width and runs, else step_loop() (whose cells pick their own path through cell()).
    direction names the operator (e.g. "onlstm forward"); t is the tensor whose device and
    dtype decide; width is D."""
    key = (direction, str(t.device), t.dtype, width)
    reason = _loop_reason(key, t, width)
    if reason is None:
        module = _import(LOOP_KERNELS)
        if isinstance(module, str):
            reason = module
        else:
            try:
                with _on(t):
                    out = loop(module)
                _announce(key, "the persistent Triton loop kernel")
                return out
            except module.DoesNotFit as e:  # chosen against before launching: not a failure
                reason = _unfit[key] = str(e)
            except Exception as e:  # noqa: BLE001 (any compile or launch error: the run goes on)
                _fail(key, "persistent Triton loop kernel", e, "the step loop")
                reason = _failed[key]
    _announce(key, "the step loop", reason)
    return step_loop()


def cell(name: str, t: Tensor, width: int, fused: Callable, plain: Callable):
    """One step's cell: fused(module) (a Triton kernel, triton/recurrence_cells.py) where it runs on t,
    else, or after it failed for this shape, plain() (the torch arithmetic)."""
    key = (name, str(t.device), t.dtype, width)
    # the cells compute in float32: float64 (a precision the tests ask for) keeps torch's
    if _triton_reason(t) is None and key not in _failed and t.dtype != torch.float64:
        module = _import(CELL_KERNELS)
        if not isinstance(module, str):
            try:
                with _on(t):
                    return fused(module)
            except Exception as e:  # noqa: BLE001
                _fail(key, "Triton cell kernel", e, "the torch cell")
    return plain()


class _on:
    """The tensor's CUDA device made current for a launch (Triton launches on the current
    device's stream: a tensor on cuda:1 while cuda:0 is current would be read from the wrong GPU)."""

    def __init__(self, t: Tensor):
        self.guard = torch.cuda.device(t.device) if t.is_cuda else None

    def __enter__(self):
        if self.guard is not None:
            self.guard.__enter__()

    def __exit__(self, *exc):
        if self.guard is not None:
            return self.guard.__exit__(*exc)


def paths_taken() -> Dict[Tuple, str]:
    """{(direction, device, dtype, width): path} of this process so far (for reports and tests)."""
    return {key: path for key, path in _announced}


def reset():
    """Forget every choice and failure (tests)."""
    _modules.clear()
    _failed.clear()
    _unfit.clear()
    _announced.clear()


def triton_kernels(t: Tensor):
    """triton/recurrence_cells.py (one step's cell) where it would run on t, else None."""
    if _triton_reason(t) is not None or t.dtype == torch.float64:
        return None
    module = _import(CELL_KERNELS)
    return None if isinstance(module, str) else module


def loop_kernels(t: Tensor, width: int = 0):
    """triton/recurrence_loop.py (the whole recurrence) where run() would choose it for t (and a
    width D), else None."""
    key = ("query", str(t.device), t.dtype, width)
    if _loop_reason(key, t, width) is not None:
        return None
    module = _import(LOOP_KERNELS)
    return None if isinstance(module, str) else module


# ---------------------------------------------------------------- the operators
# The torch fallbacks are recurrence.py's (imported at the end of this file: it imports this one).

def _lstm_cell(z, c):
    return cell("lstm cell", z, z.size(-1) // 4, lambda k: k.lstm_cell(z, c), lambda: _torch.lstm_cell_torch(z, c))


def _lstm_cell_backward(z, c, c_new, dh, dh_rec, dc):
    return cell("lstm cell backward", z, z.size(-1) // 4, lambda k: k.lstm_cell_backward(z, c, c_new, dh, dh_rec, dc),
                lambda: _torch.lstm_cell_backward_torch(z, c, c_new, dh, dh_rec, dc))


def _onlstm_cell(z, c, chunk_size):
    return cell("onlstm cell", z, c_new_width(z, chunk_size), lambda k: k.onlstm_cell(z, c, chunk_size),
                lambda: _torch.onlstm_cell_torch(z, c, chunk_size))


def _onlstm_cell_backward(z, c, c_new, dh, dh_rec, dc, chunk_size):
    return cell("onlstm cell backward", z, c_new.size(-1),
                lambda k: k.onlstm_cell_backward(z, c, c_new, dh, dh_rec, dc, chunk_size),
                lambda: _torch.onlstm_cell_backward_torch(z, c, c_new, dh, dh_rec, dc, chunk_size))


def _lstm_recurrence(xg, w):
    return run("lstm forward", xg, w.size(2), lambda k: k.lstm_recurrence(xg, w),
               lambda: _torch.recurrence_torch(xg, w, 0))


def _lstm_recurrence_backward(z, c, w, d_out):
    return run("lstm backward", z, w.size(2), lambda k: k.lstm_recurrence_backward(z, c, w, d_out),
               lambda: _torch.recurrence_backward_torch(z, c, w, d_out, 0))


def _onlstm_recurrence(xg, w, chunk_size):
    return run("onlstm forward", xg, w.size(2), lambda k: k.onlstm_recurrence(xg, w, chunk_size),
               lambda: _torch.recurrence_torch(xg, w, chunk_size))


def _onlstm_recurrence_backward(z, c, w, d_out, chunk_size):
    return run("onlstm backward", z, w.size(2), lambda k: k.onlstm_recurrence_backward(z, c, w, d_out, chunk_size),
               lambda: _torch.recurrence_backward_torch(z, c, w, d_out, chunk_size))


def c_new_width(z: Tensor, chunk_size: int) -> int:
    """D of an ON-LSTM step's gates: K = 4 D + 2 D / chunk_size."""
    return z.size(-1) * chunk_size // (4 * chunk_size + 2)


# shapes alone (fake tensors): what torch.compile and torch.library.opcheck trace with

def _cell_fake(z, c, width):
    Gr, B, _ = z.shape
    return z.new_empty(Gr, B, width), z.new_empty(Gr, B, width)


def _cell_backward_fake(z, c, c_new):
    return torch.empty_like(z, memory_format=torch.contiguous_format), \
        z.new_empty(0) if c is None else torch.empty_like(c_new, memory_format=torch.contiguous_format)


def _recurrence_fake(xg, w):
    Gr, B, P, K = xg.shape
    D = w.size(2)
    return xg.new_empty(Gr, B, P, D), xg.new_empty(Gr, B, P, K), xg.new_empty(Gr, B, P, D), \
        xg.new_empty(Gr, (P - 1) * B, D)


def _recurrence_backward_fake(z, c, w, d_out):
    Gr, B, P, K = z.shape
    return z.new_empty(Gr, B, P, K), z.new_empty(Gr, (P - 1) * B, K)


NAMESPACE = "mgsa_recurrence"
SCHEMAS = {
    "lstm_cell": ("(Tensor z, Tensor? c) -> (Tensor, Tensor)", _lstm_cell,
                  lambda z, c: _cell_fake(z, c, z.size(-1) // 4)),
    "lstm_cell_backward": ("(Tensor z, Tensor? c, Tensor c_new, Tensor dh, Tensor? dh_rec, Tensor? dc) "
                           "-> (Tensor, Tensor)", _lstm_cell_backward,
                           lambda z, c, c_new, *_: _cell_backward_fake(z, c, c_new)),
    "onlstm_cell": ("(Tensor z, Tensor? c, int chunk_size) -> (Tensor, Tensor)", _onlstm_cell,
                    lambda z, c, cs: _cell_fake(z, c, c_new_width(z, cs))),
    "onlstm_cell_backward": ("(Tensor z, Tensor? c, Tensor c_new, Tensor dh, Tensor? dh_rec, Tensor? dc, "
                             "int chunk_size) -> (Tensor, Tensor)", _onlstm_cell_backward,
                             lambda z, c, c_new, *_: _cell_backward_fake(z, c, c_new)),
    "lstm_recurrence": ("(Tensor xg, Tensor w) -> (Tensor, Tensor, Tensor, Tensor)", _lstm_recurrence,
                        _recurrence_fake),
    "lstm_recurrence_backward": ("(Tensor z, Tensor c, Tensor w, Tensor d_out) -> (Tensor, Tensor)",
                                 _lstm_recurrence_backward, _recurrence_backward_fake),
    "onlstm_recurrence": ("(Tensor xg, Tensor w, int chunk_size) -> (Tensor, Tensor, Tensor, Tensor)",
                          _onlstm_recurrence, lambda xg, w, cs: _recurrence_fake(xg, w)),
    "onlstm_recurrence_backward": ("(Tensor z, Tensor c, Tensor w, Tensor d_out, int chunk_size) "
                                   "-> (Tensor, Tensor)", _onlstm_recurrence_backward,
                                   lambda z, c, w, d, cs: _recurrence_backward_fake(z, c, w, d)),
}


def register(schemas):
    """Defines {name: (schema, implementation, fake)} in the namespace: the implementation for
    CPU and CUDA tensors alike (it picks its own path), the fake for tracing."""
    # a fragment, so that a second import of a file (another package name) adds nothing twice
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")
    for name, (schema, fn, fake) in schemas.items():
        if hasattr(getattr(torch.ops, NAMESPACE), name):
            continue
        lib.define(name + schema)
        for key in ("CPU", "CUDA"):
            lib.impl(name, fn, key)
        torch.library.register_fake(f"{NAMESPACE}::{name}", fake, lib=lib)
    return lib


_LIBRARY = register(SCHEMAS)
ops = getattr(torch.ops, NAMESPACE)

# the torch cells lived in fairseq_mgsa.modules.recurrence_cells, an old name of this module
_TORCH_CELLS = {"lstm_cell_torch", "lstm_cell_backward_torch", "onlstm_cell_torch", "onlstm_cell_backward_torch"}


def __getattr__(name: str):
    if name == "recurrence_path":  # recurrence_cells.recurrence_path was this module
        return sys.modules[__name__]
    if name in _TORCH_CELLS:
        return getattr(_torch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
