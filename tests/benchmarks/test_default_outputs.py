"""Where the benchmark scripts write when no path is given: benchmarks/runs/ (run_outputs.py), a folder
git ignores, never a tracked file of the checkout (the committed results in docs/results/ change
only when a path there is given). The scripts are imported as `python -m benchmarks.X` runs them."""

import argparse
import glob
import importlib
import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT, checkout_pythonpath

BENCHMARKS = os.path.join(ROOT, "benchmarks")
HELPERS = {"__init__", "run_outputs", "timing"}  # modules the scripts import, not scripts
# a script: a module of benchmarks/ or a package with a __main__.py (op_counts)
SCRIPTS = sorted([name for name in (os.path.basename(p)[:-3] for p in glob.glob(os.path.join(BENCHMARKS, "*.py")))
                  if name not in HELPERS]
                 + [os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(BENCHMARKS, "*", "__main__.py"))])
# the files each script writes; every one must default into benchmarks/runs/
WRITTEN = {"bench_training": ["out", "history"], "bench_parser_training": ["out"], "bench_parsing": ["out"],
           "bench_preprocess": ["out"], "profile_layers": ["out"], "op_counts": ["out"], "zh_real_text": ["out"], "recurrence_paths": ["out"]}


def in_git_checkout():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--is-inside-work-tree"], capture_output=True,
                              text=True).stdout.strip() == "true"
    except FileNotFoundError:
        return False


GIT = in_git_checkout()


@pytest.fixture
def load():
    def load(script):
        main = os.path.join(BENCHMARKS, script, "__main__.py")
        return importlib.import_module(f"benchmarks.{script}" + (".__main__" if os.path.exists(main) else ""))
    return load


def runs_folder():
    from benchmarks import run_outputs  # the module the scripts import
    return run_outputs.RUNS


def assert_run_output(path):
    """PATH lies in benchmarks/runs/, which git ignores, and is no tracked file."""
    path = os.path.abspath(path)
    assert os.path.commonpath([path, runs_folder()]) == runs_folder(), path
    if GIT:
        rel = os.path.relpath(path, ROOT)
        assert subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", rel]).returncode == 0, \
            f"{rel} is not ignored by git"
        tracked = subprocess.run(["git", "-C", ROOT, "ls-files", "--", rel], capture_output=True, text=True,
                                 check=True).stdout
        assert not tracked, f"{rel} is a tracked file"


def test_the_scripts_edit_no_import_path():
    """They run as `python -m benchmarks.X` from the checkout's root: nothing puts a folder on sys.path."""
    for path in glob.glob(os.path.join(BENCHMARKS, "**", "*.py"), recursive=True):
        text = open(path, encoding="utf-8").read()
        assert "sys.path.insert" not in text and "sys.path.append" not in text, path


@pytest.mark.parametrize("script", ["bench_training", "op_counts"])
def test_a_script_runs_as_a_module(script):
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{script}", "--help"], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=checkout_pythonpath()), capture_output=True, text=True)
    assert proc.returncode == 0 and "usage:" in proc.stdout, proc.stderr[-2000:]


def test_every_script_is_checked():
    assert sorted(WRITTEN) == SCRIPTS


def test_the_runs_folder_is_ignored_and_apart_from_the_committed_results(load):
    load("bench_preprocess")
    assert os.path.dirname(runs_folder()) == BENCHMARKS
    assert_run_output(os.path.join(runs_folder(), "any.json"))


def parsers(parser):
    """The parser, or its sub-commands' where it has some (profile_layers)."""
    subs = [a.choices.values() for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [p for choices in subs for p in choices] or [parser]


@pytest.mark.parametrize("script", sorted(WRITTEN))
def test_default_outputs_lie_in_the_ignored_runs_folder(load, script):
    for parser in parsers(load(script).get_parser()):
        for dest in WRITTEN[script]:
            if script in ("bench_training", "op_counts") and dest == "out":
                continue  # made from --device and --arch-size: the next test
            assert_run_output(parser.get_default(dest))
        # and no other default of the parser points into the checkout outside benchmarks/runs/
        for action in parser._actions:
            default = action.default
            if isinstance(default, str) and os.path.isabs(default) and \
                    os.path.commonpath([default, ROOT]) == ROOT:
                assert_run_output(default)


def test_training_results_default_into_the_runs_folder(load):
    bench_training, op_counts = load("bench_training"), load("op_counts")
    from fairseq_mgsa import systems

    for device in ("cpu", "cuda"):
        for size in systems.SIZES:
            assert_run_output(bench_training.result_path(device, size))
            assert_run_output(op_counts.result_path(device, size))


def test_the_runs_folder_is_made_when_first_written(load, tmp_path, monkeypatch, capsys):
    bench_preprocess = load("bench_preprocess")
    from benchmarks import run_outputs

    monkeypatch.setattr(run_outputs, "RUNS", str(tmp_path / "runs"))
    bench_preprocess.main(["--sentences", "20"])
    written = json.loads((tmp_path / "runs" / "preprocess.json").read_text())
    assert [(r["form"], r["sentences"]) for r in written["results"]] == [("one-line", 20), ("ptb", 20)]
    # the result names the code it measured inside it, not in its file name
    assert written["git_commit"] == (run_outputs.git_info()["commit"] if GIT else None)
    assert f"wrote {tmp_path / 'runs' / 'preprocess.json'}" in capsys.readouterr().out
