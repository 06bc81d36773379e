"""What a GPU pays for in one training update, counted on any machine, the CPU included: the
aten operators that run a kernel on the device, and the host-device synchronisations.

OpCounter is a TorchDispatchMode, below autograd: it sees the backward's operators (activation
checkpointing's recomputation too), the optimizer's, and the forward's after every composite
operator has been decomposed into what runs. What counts, and why: docs/benchmarks.md,
"Operators and synchronisations"; RULES below, stored with every count, says it in short.
"""

import collections
import contextlib
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

from benchmarks.run_outputs import ROOT

aten = torch.ops.aten
ALLOCATIONS = {aten.empty, aten.empty_strided, aten.empty_like, aten.new_empty, aten.new_empty_strided,
               aten.empty_permuted}
SCALAR_READS = {aten._local_scalar_dense, aten.equal, aten.is_nonzero}
DATA_DEPENDENT = {aten.nonzero: "nonzero", aten.masked_select: "masked_select", aten._unique: "unique",
                  aten._unique2: "unique", aten.unique_dim: "unique", aten.unique_consecutive: "unique",
                  aten.unique_dim_consecutive: "unique", aten.bincount: "bincount"}
BOOL_INDEXED = {aten.index, aten.index_put, aten.index_put_, aten._index_put_impl_}
PHASES = ("forward", "backward", "optimizer")
_TORCH_DIR = os.path.dirname(torch.__file__)


def _mutates(func, cache={}):
    if func not in cache:
        cache[func] = any(a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments)
    return cache[func]


def _written(func, args, kwargs):
    """The tensors an operator writes into (its schema's mutable arguments)."""
    out = []
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            value = args[i] if i < len(args) and not a.kwarg_only else kwargs.get(a.name)
            out += [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]
    return out


def _storage(t):
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):  # no storage (a tensor subclass)
        return None


def _site():
    """The innermost Python frame outside torch and this file: where the model asked for it
    (`file:line function`, relative to the project or to site-packages)."""
    f = sys._getframe(2)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_TORCH_DIR) and path != os.path.abspath(__file__) and "contextlib" not in path:
            if path.startswith(ROOT + os.sep):
                path = os.path.relpath(path, ROOT)
            elif "site-packages" in path:
                path = path.split("site-packages" + os.sep, 1)[1]
            return f"{path}:{f.f_lineno} {f.f_code.co_name}"
        f = f.f_back
    return "?"


class OpCounter(TorchDispatchMode):
    """Counts kernel operators and host synchronisations of what runs under it (the module's
    docstring gives the rules). `device`: where the work runs; on the CPU, host-side tensors
    are told from device data by where they came from. Use `with counter.phase("forward"):`
    to split the counts; `summary()` gives them."""

    def __init__(self, device="cpu", modules=None):
        super().__init__()
        # a modules.ModuleSites (entered by the caller): kernel operators also counted by
        # the module running them, forward and backward
        self.modules = modules
        self.by_module = collections.Counter()     # (phase, module, op name) -> count
        self.simulated = torch.device(device).type == "cpu"
        self.host = WeakIdKeyDictionary()
        self.current = "other"
        self.kernels = collections.Counter()        # (phase, op name) -> count
        self.syncs = collections.Counter()          # (phase, kind) -> count
        self.sync_sites = collections.Counter()     # "kind op at file:line function" -> count
        self.left_out = collections.Counter()       # view / allocation / host / no tensor -> count
        self.dropout_masks = WeakIdKeyDictionary()  # the CPU's dropout mask -> "drawn" / "scaled" / "applied"
        self._patched = {}

    # ---- where a tensor lives
    def is_host(self, t):
        """On a GPU: on the CPU. Counting on the CPU: a 0-dim tensor from outside the count (not a
        parameter, not requiring grad: the optimizer's step counters), or one that a host-side
        operator, a 0-dim factory or a bare allocation from no device data made and no operator
        has written device data into since (GradScaler's found_inf). (A 0-dim tensor made with
        device= on a GPU is thus taken for a host one: rare, and it errs towards fewer operators.)"""
        if not self.simulated or t.device.type != "cpu":
            return t.device.type == "cpu"
        known = self.host.get(t)
        if known is not None:
            return known
        return t.dim() == 0 and not t.requires_grad and not isinstance(t, torch.nn.Parameter)

    @contextlib.contextmanager
    def phase(self, name):
        before, self.current = self.current, name
        try:
            yield
        finally:
            self.current = before

    def _sync(self, kind, op):
        self.syncs[self.current, kind] += 1
        where = _site() if self.current != "backward" else "autograd (backward of a forward operator)"
        self.sync_sites[f"{kind} ({op}) at {where}"] += 1

    # ---- the dispatch
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        host_in = all(self.is_host(t) for t in inputs)
        packet, name = func.overloadpacket, str(func).replace("aten.", "").replace(".default", "")
        if self.simulated:
            for t in outputs:
                self.host[t] = host_in and (bool(inputs) or t.dim() == 0 or packet in ALLOCATIONS)
            if not host_in and _mutates(func):
                # device data written into a tensor makes it device data (GradScaler's found_inf,
                # a 0-dim factory's, once the unscale writes it)
                for t in _written(func, args, kwargs):
                    self.host[t] = False
        if host_in and (inputs or all(t.dim() == 0 for t in outputs)):
            # host-side: reads nothing from the device (a 0-dim factory, the step counters)
            self.left_out["host-side scalar"] += 1
            return out
        if packet in SCALAR_READS:
            self._sync("item", name)
            return out
        if not outputs and not _mutates(func):
            self.left_out["no tensor returned"] += 1
            return out
        if packet in ALLOCATIONS:
            self.left_out["bare allocation"] += 1
            return out
        if not _mutates(func):
            shared = {_storage(t) for t in inputs} - {None}
            if all(_storage(t) in shared for t in outputs):
                self.left_out["view"] += 1
                return out
        if self.simulated and self._cpu_dropout(func, args):
            return out
        self.kernels[self.current, name] += 1
        if self.modules is not None:
            self.by_module[self.current, self.modules.where(), name] += 1
        kind = DATA_DEPENDENT.get(packet)
        if kind is None and packet in BOOL_INDEXED:
            indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
            if any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in indices):
                kind = "boolean index"
        if kind is None and packet is aten.repeat_interleave and func is aten.repeat_interleave.Tensor \
                and kwargs.get("output_size", args[1] if len(args) > 1 else None) is None:
            kind = "repeat_interleave"
        if kind is None and packet in (aten._to_copy, aten.copy_):
            src = args[0] if packet is aten._to_copy else args[1]
            dst = kwargs.get("device") if packet is aten._to_copy else args[0].device
            if dst is not None and torch.device(dst).type == "cpu" and src.device.type != "cpu":
                kind = "to host"
        if kind is not None:
            self._sync(kind, name)
        return out

    def _cpu_dropout(self, func, args):
        """The CPU's dropout, bernoulli_ of a fresh mask, div_ of it by 1 - p, the input times it,
        counted as what a GPU runs: one native_dropout. True where `func` is a part left out."""
        if func is aten.bernoulli_.float:
            self.dropout_masks[args[0]] = "drawn"
            self.kernels[self.current, "native_dropout"] += 1
            return True
        if func is aten.div_.Scalar and self.dropout_masks.get(args[0]) == "drawn":
            self.dropout_masks[args[0]] = "scaled"
            self.left_out["dropout, one native_dropout on a GPU"] += 1
            return True
        if func is aten.mul.Tensor:
            for t in args[:2]:
                if isinstance(t, torch.Tensor) and self.dropout_masks.get(t) == "scaled":
                    self.dropout_masks[t] = "applied"  # the backward's mul by the mask is counted
                    self.left_out["dropout, one native_dropout on a GPU"] += 1
                    return True
        return False

    def module_summary(self):
        """{module (layer numbers as *): {"forward": n, "backward": n, ..., "ops": {op: n}}},
        most operators first; empty without a module tracker."""
        out = collections.defaultdict(lambda: {"kernel_ops": 0, "ops": collections.Counter()})
        for (phase, module, name), n in self.by_module.items():
            m = out[module]
            m["kernel_ops"] += n
            m[phase] = m.get(phase, 0) + n
            m["ops"][f"{phase} {name}"] += n
        return {k: {**v, "ops": dict(v["ops"].most_common())}
                for k, v in sorted(out.items(), key=lambda kv: -kv[1]["kernel_ops"])}

    # ---- copies to the host that dispatch nothing on the CPU
    def __enter__(self):
        if self.simulated:
            for method in ("tolist", "cpu", "numpy"):
                original = getattr(torch.Tensor, method)
                self._patched[method] = torch.Tensor.__dict__.get(method)  # None: inherited from TensorBase

                def wrapper(t, *a, _original=original, _method=method, **k):
                    if t.device.type == "cpu" and not self.is_host(t):
                        self._sync("to host", _method)
                    return _original(t, *a, **k)
                setattr(torch.Tensor, method, wrapper)
        return super().__enter__()

    def __exit__(self, *exc):
        for method, original in self._patched.items():
            if original is None:
                delattr(torch.Tensor, method)
            else:
                setattr(torch.Tensor, method, original)
        self._patched = {}
        return super().__exit__(*exc)

    # ---- the figures
    def summary(self):
        phases = [p for p in PHASES + ("other",)
                  if any(k[0] == p for k in self.kernels) or any(k[0] == p for k in self.syncs)]
        by_op = collections.Counter()
        for (_, name), n in self.kernels.items():
            by_op[name] += n
        kinds = collections.Counter()
        for (_, kind), n in self.syncs.items():
            kinds[kind] += n
        return {
            "kernel_ops": sum(self.kernels.values()),
            "host_syncs": sum(self.syncs.values()),
            "by_phase": {p: {"kernel_ops": sum(n for (q, _), n in self.kernels.items() if q == p),
                             "host_syncs": sum(n for (q, _), n in self.syncs.items() if q == p)} for p in phases},
            "syncs_by_kind": dict(kinds.most_common()),
            "sync_sites": dict(self.sync_sites.most_common()),
            "by_op": dict(by_op.most_common()),
            "left_out": dict(self.left_out.most_common()),
        }


def as_on_gpu(model):
    """Sets the choices the plugin's modules make by device as a GPU makes them, so that a count
    on the CPU counts what a GPU runs: PhraseMemory composes every granularity at once (the
    CPU layout composes them one by one). Returns how many modules were set."""
    from fairseq_mgsa.modules.mgsa.phrase_memory import PhraseMemory

    n = 0
    for m in model.modules():
        if isinstance(m, PhraseMemory) and m.compose_all_at_once is None:
            m.compose_all_at_once, n = True, n + 1
    return n


def count(fn, *args, device="cpu", **kwargs):
    """(fn's result, the OpCounter summary of running fn(*args, **kwargs) once)."""
    counter = OpCounter(device)
    with counter:
        result = fn(*args, **kwargs)
    return result, counter.summary()


def count_update(step, sample, device, modules=()):
    """The summary of one training update `step(sample, phase)` (update.update_step's
    signature), split into forward, backward and optimizer; given modules (the model, the
    criterion), "by_module" holds the kernel operators per submodule of them
    (OpCounter.module_summary, modules.py)."""
    tracker = None
    if modules:
        from .modules import ModuleSites
        tracker = ModuleSites(*modules)
    counter = OpCounter(device, modules=tracker)
    with tracker or contextlib.nullcontext(), counter:
        step(sample, counter.phase)
    summary = counter.summary()
    if modules:
        summary["by_module"] = counter.module_summary()
    return summary


RULES = ("aten operators dispatched in one training update (forward, backward, torch.optim.Adam(foreach=True) "
         "step) on the first batch, after one uncounted update on it (the optimizer's state and the models' caches "
         "made), counted below autograd (benchmarks/op_counts); left out: views (no write, output on an "
         "input's storage), bare allocations, host-side scalar work, operators returning no tensor; a foreach "
         "operator counts once; on the CPU as a GPU runs it: dropout one native_dropout, the plugin's device "
         "choices as on a GPU (as_on_gpu). host_syncs: .item()/int()/bool() of device data, equal, is_nonzero, nonzero, "
         "masked_select, unique, bincount, boolean-mask index/index_put, repeat_interleave without output_size, "
         "tolist/cpu/numpy/copies to the host of device data")


def ratios(results, baseline):
    """kernel_op_ratio of every system (results[name]["ops"]) against the baseline's; None without it."""
    base = (results.get(baseline) or {}).get("ops")
    for r in results.values():
        ops = r.get("ops")
        r["kernel_op_ratio"] = ops["kernel_ops"] / base["kernel_ops"] if ops and base and base["kernel_ops"] else None
        r["flop_ratio"] = r.get("flop_ratio") or (
            r["flops_per_update"] / results[baseline]["flops_per_update"]
            if baseline in results and results[baseline].get("flops_per_update") and r.get("flops_per_update")
            else None)
