"""The project's structure as rooms and arrows, measured from its imports (docs/architecture.md).

A room is a folder of Python files (a package, or a top-level folder such as ``benchmarks/``); an
arrow is "some file of room A imports a file of room B"; a circle is a set of files that import
each other round (a strongly connected component of the file graph). Only the installed code and
the benchmarks are drawn: tests, recipes and docs are left out, as they import everything by
design. The imports are read with ``ast`` (nothing is run), from the working tree or, with
``--rev``, from any commit, so a past layout can be drawn beside today's:

    python scripts/import_graph.py                 # the working tree, as Markdown
    python scripts/import_graph.py --rev v0.9      # a commit or tag

The Markdown holds the numbers (rooms, arrows, circles, lines per room) and a Mermaid flowchart
that GitHub renders.
"""
import argparse
import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import PurePosixPath
from typing import Dict, Iterable, List, Optional, Set, Tuple

# the installed packages and the benchmarks; preprocess/ is installed as mgsa_preprocess
ROOTS = {"fairseq_mgsa": "fairseq_mgsa", "preprocess": "mgsa_preprocess", "benchmarks": "benchmarks"}


def tracked_sources(rev: Optional[str]) -> Dict[str, str]:
    """{path: text} of every .py file under ROOTS, at ``rev`` or in the working tree (git's index)."""
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev] if rev else ["git", "ls-files"],
                           capture_output=True, text=True, check=True).stdout.split()
    files = [n for n in names if n.endswith(".py") and n.split("/")[0] in ROOTS]
    if rev:
        return {n: subprocess.run(["git", "show", f"{rev}:{n}"], capture_output=True, text=True,
                                  check=True).stdout for n in files}
    return {n: open(n, encoding="utf-8").read() for n in files}


def module_name(path: str) -> str:
    """preprocess/cli.py -> mgsa_preprocess.cli; a package's __init__.py is the package."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    parts[0] = ROOTS[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: str, text: str, modules: Set[str]) -> Iterable[str]:
    """The project's modules an import statement of the file names, relative ones made absolute.
    ``from X import a`` names X.a where that is a module, else X (a name X defines); a package's
    ``__init__`` that Python runs before any of its submodules is not an arrow of its own."""
    package = module_name(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    for node in ast.walk(ast.parse(text, filename=path)):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                yield f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem


def file_graph(sources: Dict[str, str]) -> Dict[str, Set[str]]:
    """path -> the paths of the project's files it imports (packages resolve to their __init__)."""
    by_module = {module_name(p): p for p in sources}
    graph = {}
    for path, text in sources.items():
        targets = {by_module[m] for m in imported_modules(path, text, set(by_module)) if m in by_module}
        graph[path] = targets - {path}
    return graph


def room(path: str) -> str:
    return str(PurePosixPath(path).parent)


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one file (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
                found.append(sorted(component))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def measure(sources: Dict[str, str]) -> dict:
    graph = file_graph(sources)
    lines: Dict[str, int] = defaultdict(int)
    files: Dict[str, int] = defaultdict(int)
    for path, text in sources.items():
        lines[room(path)] += len(text.splitlines())
        files[room(path)] += 1
    arrows: Set[Tuple[str, str]] = {(room(a), room(b)) for a, targets in graph.items() for b in targets
                                    if room(a) != room(b)}
    return {"rooms": {r: {"files": files[r], "lines": lines[r]} for r in sorted(lines)},
            "arrows": sorted(arrows), "circles": circles(graph),
            "largest_file": max(((len(t.splitlines()), p) for p, t in sources.items()), default=(0, ""))}


def mermaid(result: dict) -> List[str]:
    ids = {r: f"r{i}" for i, r in enumerate(result["rooms"])}
    out = ["```mermaid", "flowchart LR"]
    for r, info in result["rooms"].items():
        out.append(f'  {ids[r]}["{r}/ ({info["files"]} files, {info["lines"]} lines)"]')
    out += [f"  {ids[a]} --> {ids[b]}" for a, b in result["arrows"]]
    return out + ["```"]


def markdown(result: dict, title: str) -> str:
    rooms = result["rooms"]
    out = [f"### {title}", "",
           f"{len(rooms)} rooms, {len(result['arrows'])} arrows between rooms, "
           f"{len(result['circles'])} import circles; "
           f"the largest file: {result['largest_file'][1]} ({result['largest_file'][0]} lines).", "",
           "| room | files | lines |", "|---|---:|---:|"]
    out += [f"| {r}/ | {i['files']} | {i['lines']} |" for r, i in rooms.items()]
    out += ["", *("circle: " + " <-> ".join(c) for c in result["circles"])]
    return "\n".join(out + [""] + mermaid(result)) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rev", help="a commit, branch or tag to draw (default: the working tree)")
    p.add_argument("--title", help="the section's heading (default: the revision)")
    args = p.parse_args(argv)
    try:
        sources = tracked_sources(args.rev)
    except subprocess.CalledProcessError as e:
        print(f"import_graph.py: error: git could not read {args.rev or 'the working tree'}: "
              f"{e.stderr.strip()}", file=sys.stderr)
        return 1
    sys.stdout.write(markdown(measure(sources), args.title or args.rev or "the working tree"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
