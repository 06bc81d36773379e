"""The modules' old dotted names (fairseq_mgsa.modules.<file> before the files moved into one
folder per method and fairseq_mgsa/ops/) still import for one release: the same module object
as the new name (so that a monkeypatch through the old name patches the code that runs), one
FutureWarning naming the new place, and the attributes scripts read from the old modules."""

import importlib
import importlib.util
import sys
import warnings

import pytest

import fairseq_mgsa.modules as package
from fairseq_mgsa.modules import _moved


def forget(old):
    """The old name as if never imported in this process (the new module stays)."""
    sys.modules.pop(f"fairseq_mgsa.modules.{old}", None)
    package.__dict__.pop(old, None)


def needs_triton(new):
    if ".ops.triton." in new and importlib.util.find_spec("triton") is None:
        pytest.skip("the Triton kernels import only where Triton is")


@pytest.mark.parametrize("old,new", sorted(_moved.MOVED.items()))
def test_the_old_name_is_the_new_module_and_warns_once(old, new):
    needs_triton(new)
    forget(old)
    with pytest.warns(FutureWarning) as record:
        module = importlib.import_module(f"fairseq_mgsa.modules.{old}")
    assert module is importlib.import_module(new)
    moved = [str(w.message) for w in record if issubclass(w.category, FutureWarning)]
    assert moved == [f"fairseq_mgsa.modules.{old} moved to {new}; the old name goes in the next release"]
    assert record[0].filename == __file__  # pointed at the import, not at importlib
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.import_module(f"fairseq_mgsa.modules.{old}") is module
        exec(f"from fairseq_mgsa.modules import {old} as again", {})  # noqa: S102
        assert getattr(package, old) is module


@pytest.mark.parametrize("old,statement", [
    ("multi_granularity_attention",
     "from fairseq_mgsa.modules.multi_granularity_attention import MultiGranularitySelfAttention as X"),
    ("phrase_based_attention", "import fairseq_mgsa.modules.phrase_based_attention as m; X = m.PhraseBasedAttention"),
    ("recurrence_cells", "from fairseq_mgsa.modules import recurrence_cells as m; X = m.loop_kernels"),
    ("hybrid_attention", "import fairseq_mgsa.modules as m; X = m.hybrid_attention.HybridMultiheadAttention"),
])
def test_old_import_statements_run(old, statement):
    """The forms scripts use, the last one an attribute of the package without an import (the
    package imported the files it held)."""
    forget(old)
    scope = {}
    with pytest.warns(FutureWarning, match=f"fairseq_mgsa.modules.{old} moved to"):
        exec(statement, scope)  # noqa: S102
    assert scope["X"] is getattr(importlib.import_module(_moved.MOVED[old]), scope["X"].__name__)


def test_the_merged_recurrence_files_keep_their_attributes(monkeypatch):
    """recurrence_cells and recurrence_loops were merged into ops/; what scripts read from them
    resolves, and a monkeypatch through the old name reaches the code that reads it."""
    import torch

    from fairseq_mgsa.ops import recurrence, recurrence_path

    with pytest.warns(FutureWarning):
        forget("recurrence_cells")
        from fairseq_mgsa.modules import recurrence_cells
        forget("recurrence_loops")
        from fairseq_mgsa.modules import recurrence_loops
    for name in ("triton_kernels", "loop_kernels", "TRITON_ON_CPU", "ops", "register", "NAMESPACE", "c_new_width",
                 "lstm_cell_torch", "lstm_cell_backward_torch", "onlstm_cell_torch", "onlstm_cell_backward_torch",
                 "recurrence_path"):
        assert hasattr(recurrence_cells, name), name
    for name in ("recurrence_torch", "recurrence_backward_torch", "ops", "register", "recurrence_path"):
        assert hasattr(recurrence_loops, name), name
    assert recurrence_cells.lstm_cell_torch is recurrence.lstm_cell_torch
    t = torch.zeros(1)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(recurrence_cells, "TRITON_ON_CPU", True)
    assert recurrence_path._triton_reason(t) is None  # the patched flag is the one the path reads
    monkeypatch.setattr(recurrence_cells, "TRITON_ON_CPU", False)
    assert recurrence_path._triton_reason(t) == "a cpu tensor"


def test_no_module_file_left_at_the_top_level():
    """Every method's file lives in its folder: the top level holds the package's interface only."""
    import os

    top = sorted(n for n in os.listdir(os.path.dirname(package.__file__)) if n.endswith(".py"))
    assert top == ["__init__.py", "_moved.py"]
    assert not any(os.path.exists(os.path.join(os.path.dirname(package.__file__), f"{old}.py")) for old in _moved.MOVED)
