"""Which path the phrase-interaction recurrence takes for a tensor, and the way back when a
Triton kernel fails. Three paths compute the same numbers (within the dtype's rounding):

    loop   one persistent Triton kernel each way (recurrence_triton_loop.py): a CUDA tensor of
           float32, float16 or bfloat16, a width D the loop kernel is chosen for (LOOP_MAX_D),
           and a compiled kernel whose shared memory fits the device's per-block limit
    cells  the torch step loop with one fused Triton cell a step (recurrence_triton.py): a CUDA
           tensor of a half type or float32 where the loop kernel is not taken (a wide D, too
           little shared memory)
    torch  the torch step loop with torch cells: the CPU, float64, a torch without Triton, ROCm,
           MGSA_NO_TRITON=1, or a shape whose Triton kernel failed once

A run never ends on a kernel: a Triton failure (an import, a compilation, a launch, a
resource limit) is logged once as a warning naming the path taken instead and MGSA_NO_TRITON,
and that shape takes the torch path from then on. The path each (direction, device, dtype,
width) takes is logged once, at its first use, with the reason when it is not the loop kernel.
"""

import importlib
import logging
import os
from typing import Callable, Dict, Optional, Tuple

import torch
from torch import Tensor

logger = logging.getLogger(__name__)

# The widest D the loop kernel is chosen for. Past it the kernel holds a gate group of
# BLOCK_B x D float32 values per program and ptxas spills them (docs/gpu.md has the
# measurements per width and GPU class); the per-step cells are then the faster fused path.
LOOP_MAX_D = 256
# tests set this (with TRITON_INTERPRET=1) to run the Triton kernels on CPU tensors
TRITON_ON_CPU = False

_modules: Dict[str, object] = {}  # kernel modules once imported, or the import's error text
_failed: Dict[tuple, str] = {}  # shapes whose kernel failed: the torch path from then on
_unfit: Dict[tuple, str] = {}  # shapes whose loop kernel needs more shared memory than the device has
_announced: set = set()  # (key, path) already logged


def _import(name: str):
    """fairseq_mgsa.modules.<name>, or the reason it cannot be had (a string)."""
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
    """loop(module) (the persistent kernel, recurrence_triton_loop) where it applies to t and
    width and runs, else step_loop() (whose cells pick their own path through cell()).
    direction names the operator (e.g. "onlstm forward"); t is the tensor whose device and
    dtype decide; width is D."""
    key = (direction, str(t.device), t.dtype, width)
    reason = _loop_reason(key, t, width)
    if reason is None:
        module = _import("recurrence_triton_loop")
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
    """One step's cell: fused(module) (a Triton kernel, recurrence_triton.py) where it runs on t,
    else, or after it failed for this shape, plain() (the torch arithmetic)."""
    key = (name, str(t.device), t.dtype, width)
    # the cells compute in float32: float64 (a precision the tests ask for) keeps torch's
    if _triton_reason(t) is None and key not in _failed and t.dtype != torch.float64:
        module = _import("recurrence_triton")
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
