"""Where the benchmark scripts write, and how. When no path is given: benchmarks/runs/, a folder git
ignores, made when a run first writes there. Running a benchmark thus never changes the committed
results in docs/results/, the figures the docs cite; recording a result there is a deliberate act:
its path given, e.g. `--out docs/results/parsing.json` (docs/benchmarks.md). Every result names the
code it measured inside it (git_commit, git_dirty), not in its file name. The scripts run from the
checkout's root as `python -m benchmarks.X`."""

import json
import os
import subprocess

RUNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_out(name: str) -> str:
    """benchmarks/runs/NAME: the file a run writes by default."""
    return os.path.join(RUNS, name)


def with_folder(path: str) -> str:
    """PATH, its folder made first if missing (benchmarks/runs/ the first time)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return path


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: a figure is only comparable with them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def git_info() -> dict:
    """{"commit": the checkout's HEAD or None outside git, "dirty": tracked files changed}."""
    def git(*a):
        try:
            return subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except Exception:
            return ""
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def write_json(path: str, result: dict, indent=2, **options) -> str:
    """RESULT as JSON to PATH (its folder made first), with the commit it measured (git_commit,
    git_dirty) unless it names one already; returns PATH."""
    if "git_commit" not in result:
        gi = git_info()
        result = {"git_commit": gi["commit"], "git_dirty": gi["dirty"], **result}
    with open(with_folder(path), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=indent, **options)
        f.write("\n")
    return path
