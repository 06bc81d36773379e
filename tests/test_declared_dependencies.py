"""Every package the code imports is declared in setup.py, and everything declared imports.

CI runs the suite in a new virtual environment holding only what setup.py declares
(.ci/run), where an undeclared import fails; these tests say which one, and also catch an
undeclared import that the developer's own Python happens to provide.
"""

import ast
import importlib.metadata as metadata
import os
import re
import subprocess
import sys

import pytest

from fairseq_mgsa import preflight

from tests.paths import ROOT, checkout_env
CODE_DIRS = ("fairseq_mgsa", "preprocess", "examples", "benchmarks", "tests")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def setup_keyword(name: str):
    """The literal value of setup(name=...) in setup.py, read without running it."""
    tree = ast.parse(open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup":
            for kw in node.keywords:
                if kw.arg == name:
                    return ast.literal_eval(kw.value)
    raise AssertionError(f"setup.py has no {name}=")


def declared_distributions():
    reqs = list(setup_keyword("install_requires"))
    for extra in setup_keyword("extras_require").values():
        reqs += extra
    return {normalise(re.match(r"[A-Za-z0-9_.\-]+", r).group(0)) for r in reqs}


def local_modules():
    """Names importable from this checkout itself (packages, scripts beside each other)."""
    names = {"fairseq_mgsa", "mgsa_preprocess", *CODE_DIRS}
    for d in CODE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            names.update(f[:-3] for f in filenames if f.endswith(".py"))
            names.update(dirnames)
    return names


def third_party_imports(dirs, local):
    """{top-level module: [files]} of the absolute imports in `dirs` that are neither in the
    standard library nor `local`."""
    found = {}
    for d in dirs:
        for dirpath, _, filenames in os.walk(d):
            for f in filenames:
                if not f.endswith(".py"):
                    continue
                path = os.path.join(dirpath, f)
                for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                    if isinstance(node, ast.Import):
                        names = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        names = [node.module]
                    else:
                        continue
                    for name in names:
                        top = name.split(".")[0]
                        if top not in sys.stdlib_module_names and top not in local:
                            found.setdefault(top, []).append(os.path.relpath(path, ROOT))
    return found


def undeclared_imports(dirs, local):
    """One line per third-party module imported in `dirs` that no declared distribution provides."""
    declared = declared_distributions()
    providers = metadata.packages_distributions()
    problems = []
    for module, files in sorted(third_party_imports(dirs, local).items()):
        dists = {normalise(d) for d in providers.get(module, [])}
        if not dists and normalise(module) in declared:
            continue  # an optional extra not installed here (triton: `gpu`, what CUDA builds of torch bring)
        if not dists:
            problems.append(f"{module} (imported by {files[0]}) is not installed, so no distribution provides it")
        elif not dists & declared:
            problems.append(f"{module} (imported by {files[0]}) comes from {sorted(dists)}, not declared in setup.py")
    return problems


def test_every_third_party_import_is_declared_in_setup_py():
    problems = undeclared_imports([os.path.join(ROOT, d) for d in CODE_DIRS], local_modules())
    assert not problems, "\n".join(problems)


def test_the_check_names_an_undeclared_import(tmp_path):
    """The check above can fail: a file importing an installed but undeclared package is named."""
    local = local_modules()
    undeclared = sorted(m for m, dists in metadata.packages_distributions().items()
                        if not {normalise(d) for d in dists} & declared_distributions()
                        and m.isidentifier() and m not in sys.stdlib_module_names and m not in local)[0]
    (tmp_path / "probe.py").write_text(f"import {undeclared}.sub\nimport os\n")
    problems = undeclared_imports([str(tmp_path)], local)
    assert len(problems) == 1 and problems[0].startswith(f"{undeclared} (imported by ") \
        and problems[0].endswith("not declared in setup.py"), problems


def test_every_feature_the_long_commands_check_imports():
    """What the demo, the analyses, the recipes and mgsa-compare check before they start
    (compare-mt's report module needs `six`, which compare-mt does not declare)."""
    assert preflight.missing(list(preflight.FEATURES)) == []


def test_preflight_refuses_in_one_line_with_the_install_command(capsys, monkeypatch):
    monkeypatch.setitem(preflight.FEATURES, "compare", (("compare_mt_not_installed_here",), ("compare-mt", "six")))
    with pytest.raises(SystemExit) as e:
        preflight.require("mgsa-compare", ["sacrebleu", "compare"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith("mgsa-compare: cannot start, a package it needs does not import: compare ")
    assert err.endswith("Install: pip install compare-mt six  (or bash scripts/install.sh)")


@pytest.mark.parametrize("script", sorted(s.split("=")[0].strip() for s in setup_keyword("entry_points")["console_scripts"]))
def test_every_console_script_runs(script):
    """Each command of setup.py imports everything its --help needs (what a new user types first)."""
    target = next(s.split("=")[1].strip() for s in setup_keyword("entry_points")["console_scripts"]
                  if s.split("=")[0].strip() == script)
    module, func = target.split(":")
    code = f"import sys; sys.argv = [{script!r}, '--help']; from {module} import {func}; {func}()"
    # checkout_env: this checkout's mgsa_preprocess, not an editable install's from another folder
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env=checkout_env())
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage" in r.stdout.lower() or "mgsa" in r.stdout.lower(), r.stdout[:500]
