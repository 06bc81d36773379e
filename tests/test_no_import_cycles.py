"""No two files of the plugin (fairseq_mgsa/), of preprocess/ (mgsa_preprocess) or of the
benchmarks import each other, directly or around a longer circle (issue 53).

A circle makes the import order decide which names exist yet: errors.py and
shared_embeddings.py, synthetic.py and synthetic_zh.py each needed a function-level import to
load at all. Every import statement counts, at module level or inside a function: either runs.
The graph and its circles are scripts/import_graph.py's, which draws docs/architecture.md.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
import_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_graph)


@pytest.fixture
def graph(monkeypatch):
    monkeypatch.chdir(ROOT)  # the script reads the checkout it stands in
    return import_graph.file_graph(import_graph.tracked_sources(None))


def test_the_checker_finds_a_circle():
    assert import_graph.circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_graph.circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reads_relative_and_package_imports(graph):
    assert "fairseq_mgsa/fairseq_patches/shared_embeddings.py" in graph["fairseq_mgsa/fairseq_patches/excepthook.py"]
    assert "fairseq_mgsa/errors.py" in graph["fairseq_mgsa/fairseq_patches/excepthook.py"]
    assert "preprocess/synthetic/__init__.py" in graph["preprocess/synthetic_zh.py"]


def test_no_import_circles(graph):
    assert import_graph.circles(graph) == []
