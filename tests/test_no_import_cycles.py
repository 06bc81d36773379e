"""No two files of the plugin (fairseq_mgsa/) or of preprocess/ (mgsa_preprocess) import each
other, directly or around a longer circle (issue 53).

A circle makes the import order decide which names exist yet: errors.py and
shared_embeddings.py, synthetic.py and synthetic_zh.py each needed a function-level import to
load at all. Every import statement counts, at module level or inside a function: either runs.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"fairseq_mgsa": "fairseq_mgsa", "mgsa_preprocess": "preprocess"}


def modules():
    """{dotted module name: (path, is a package's __init__)} of every file of the two packages."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            init = parts[-1] == "__init__"
            found[".".join([package] + parts[:-1 if init else None])] = (path, init)
    return found


def import_graph(found):
    """{module: the modules of `found` it imports}. `from package import name` points at the
    submodule `name` where there is one, else at the package's __init__.py."""
    graph = {}
    for name, (path, init) in found.items():
        here = name if init else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in found}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = here
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = package + ("." + node.module if node.module else "")
                for a in node.names:
                    target = f"{base}.{a.name}" if f"{base}.{a.name}" in found else base
                    if target in found:
                        edges.add(target)
        graph[name] = edges - {name}
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reads_relative_and_package_imports():
    graph = import_graph(modules())
    assert "fairseq_mgsa.fairseq_patches.shared_embeddings" in graph["fairseq_mgsa.fairseq_patches.excepthook"]
    assert "fairseq_mgsa.errors" in graph["fairseq_mgsa.fairseq_patches.excepthook"]
    assert "mgsa_preprocess.synthetic" in graph["mgsa_preprocess.synthetic_zh"]


def test_no_import_circles():
    assert circles(import_graph(modules())) == []
