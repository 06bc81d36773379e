"""The preprocess/ folder installs as ``mgsa_preprocess``, never as a top-level ``preprocess`` (issue 20, point 8).

A top-level ``preprocess`` collides with the unrelated PyPI package of that name.
The check builds what an install puts on sys.path from a copy of the checkout
(setuptools' build_py, the tree a wheel packs, and egg_info, whose
entry_points.txt and top_level.txt a wheel's metadata carries), so the
checkout itself is not touched. ``wheel`` is not a dependency, so no wheel is zipped.
"""

import configparser
import os
import re
import shutil
import subprocess
import sys

from tests.paths import ROOT


def build(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "README.md"):
        shutil.copy(os.path.join(ROOT, name), src / name)
    for name in ("fairseq_mgsa", "preprocess"):
        shutil.copytree(os.path.join(ROOT, name), src / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path), "build",
                    "--build-base", str(tmp_path / "build")], cwd=src, check=True, capture_output=True, timeout=120)
    (info,) = tmp_path.glob("*.egg-info")
    return tmp_path / "build" / "lib", info


def test_preprocess_installs_as_mgsa_preprocess(tmp_path):
    lib, info = build(tmp_path)
    assert sorted(os.listdir(lib)) == ["fairseq_mgsa", "mgsa_preprocess"]
    assert (info / "top_level.txt").read_text().split() == ["fairseq_mgsa", "mgsa_preprocess"]
    # every module of the folder and of its parser_training/ sub-package, and nothing else
    installed = {str(p.relative_to(lib / "mgsa_preprocess")) for p in (lib / "mgsa_preprocess").rglob("*.py")}
    in_checkout = {os.path.relpath(os.path.join(d, n), os.path.join(ROOT, "preprocess"))
                   for d, _, names in os.walk(os.path.join(ROOT, "preprocess")) for n in names if n.endswith(".py")}
    assert installed == in_checkout
    assert {"cli.py", "__init__.py", "parser_training/train_parser.py", "parser_training/__init__.py"} <= installed

    entry_points = configparser.ConfigParser()
    entry_points.read(info / "entry_points.txt")
    scripts = dict(entry_points["console_scripts"])
    assert scripts["mgsa-preprocess"] == "mgsa_preprocess.cli:main"
    assert scripts["mgsa-train-parser"] == "mgsa_preprocess.parser_training.train_parser:main"
    # every console script's module resolves in the built tree alone (not in the checkout beside it)
    for target in scripts.values():
        module, func = target.split(":")
        if not module.startswith("mgsa_preprocess"):
            continue
        code = (f"import importlib, sys; m = importlib.import_module({module!r}); "
                f"assert callable(getattr(m, {func!r})); print(m.__file__)")
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(lib)})
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str(lib / module.replace(".", "/")) + ".py"


# `preprocess` as a module: python -m preprocess.x, preprocess.x (not a file name: .log/.json/.md/.py), import lines
STALE = re.compile(r"-m\s+preprocess\b"
                   r"|(?<![\w/.-])preprocess\.(?!(?:log|json|md|py|txt)\b)[a-z_]+"
                   r"|(?:^|[;\"'])\s*(?:import|from)\s+preprocess\b")


def test_no_leftover_preprocess_module_references():
    """Docs, examples, scripts, benchmarks and tests name the module mgsa_preprocess (python -m, imports)."""
    found = []
    for top in ("docs", "examples", "scripts", "tests", "benchmarks", "Makefile", "README.md", "setup.py",
                "conftest.py", "preprocess", "fairseq_mgsa"):
        path = os.path.join(ROOT, top)
        files = [path] if os.path.isfile(path) else [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
        for f in files:
            if f == os.path.abspath(__file__) or "__pycache__" in f:
                continue
            try:
                with open(f, encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except (UnicodeDecodeError, OSError):
                continue  # binary data (results, figures)
            found += [f"{os.path.relpath(f, ROOT)}:{n}: {line.strip()}" for n, line in enumerate(lines, 1)
                      if STALE.search(line)]
    assert not found, "\n".join(found)
