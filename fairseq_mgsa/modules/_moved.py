"""The modules' old dotted names (fairseq_mgsa.modules.<file> before the files moved into one
folder per method and fairseq_mgsa/ops/), kept importable for one release: a user's script
that imports an old name gets the module that now holds it, the same module object (so that
monkeypatching it patches the code that runs), and one FutureWarning saying where it went.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# this package's name: "fairseq_mgsa.modules", or another where a checkout is imported under
# another name (benchmarks compare two checkouts so)
PACKAGE = __name__.rpartition(".")[0]
ROOT = PACKAGE.rpartition(".")[0]

# old name under fairseq_mgsa.modules -> the module that holds it now (merged files: the one
# holding their names)
MOVED = {
    "multi_granularity_attention": "fairseq_mgsa.modules.mgsa.attention",
    "mgsa_encoder_layer": "fairseq_mgsa.modules.mgsa.encoder_layer",
    "granularities": "fairseq_mgsa.modules.mgsa.granularities",
    "partition": "fairseq_mgsa.modules.mgsa.partition",
    "phrase_memory": "fairseq_mgsa.modules.mgsa.phrase_memory",
    "composition": "fairseq_mgsa.modules.mgsa.composition",
    "interaction": "fairseq_mgsa.modules.mgsa.interaction",
    "san_attention": "fairseq_mgsa.modules.mgsa.san_attention",
    "phrase_based_attention": "fairseq_mgsa.modules.pba.attention",
    "phrase_based_batched": "fairseq_mgsa.modules.pba.batched",
    "phrase_based_decoding": "fairseq_mgsa.modules.pba.decoding",
    "pba_layers": "fairseq_mgsa.modules.pba.layers",
    "pba_masks": "fairseq_mgsa.modules.pba.masks",
    "ngram_convolution": "fairseq_mgsa.modules.pba.ngram_convolution",
    "hybrid_attention": "fairseq_mgsa.modules.hysan.attention",
    "hybrid_relative": "fairseq_mgsa.modules.hysan.relative",
    "hysan_layers": "fairseq_mgsa.modules.hysan.layers",
    "branch_fusion": "fairseq_mgsa.modules.hysan.branch_fusion",
    "relative_attention": "fairseq_mgsa.modules.relative.attention",
    "relative_layers": "fairseq_mgsa.modules.relative.layers",
    "mask_cache": "fairseq_mgsa.modules.shared.mask_cache",
    "recurrence": "fairseq_mgsa.ops.recurrence",
    "recurrence_loops": "fairseq_mgsa.ops.recurrence",  # the torch step loop
    "recurrence_cells": "fairseq_mgsa.ops.recurrence_path",  # the cell operators, triton_kernels, loop_kernels
    "recurrence_path": "fairseq_mgsa.ops.recurrence_path",
    "recurrence_triton": "fairseq_mgsa.ops.triton.recurrence_cells",
    "recurrence_triton_loop": "fairseq_mgsa.ops.triton.recurrence_loop",
}


def new_name(old: str) -> str:
    return ROOT + MOVED[old][len("fairseq_mgsa"):]


def message(old: str) -> str:
    return f"{PACKAGE}.{old} moved to {new_name(old)}; the old name goes in the next release"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        package, _, old = fullname.rpartition(".")
        if package != PACKAGE or old not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return None  # a placeholder, replaced in exec_module

    def exec_module(self, module):
        old = module.__name__.rpartition(".")[2]
        new = importlib.import_module(new_name(old))
        warnings.warn(message(old), FutureWarning, stacklevel=_user_frame())
        # the import system returns what sys.modules holds under the name after exec_module:
        # the new module itself, not the placeholder
        sys.modules[module.__name__] = new


def _user_frame() -> int:
    """The stacklevel of the first frame outside the import machinery (the user's import).
    warnings counts no frame of importlib's _bootstrap files, so neither does this."""
    def internal(frame):
        return "importlib" in frame.f_code.co_filename and "_bootstrap" in frame.f_code.co_filename

    frame, level = sys._getframe(1), 1
    while frame is not None and ("importlib" in frame.f_code.co_filename or frame.f_code.co_filename == __file__):
        frame = frame.f_back
        while frame is not None and internal(frame):
            frame = frame.f_back
        level += 1
    return level


def install():
    if not any(isinstance(f, _Alias) for f in sys.meta_path):  # (one per copy: each its own _Alias class)
        # first, so that nothing else (a stale file of an old install) answers for the old names
        sys.meta_path.insert(0, _Alias())


def attribute(old: str):
    """fairseq_mgsa.modules.<old> as an attribute of the package (the package imported the
    files it held, so scripts could reach them without importing them)."""
    return importlib.import_module(f"{PACKAGE}.{old}")
