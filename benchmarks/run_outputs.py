"""Where the benchmark scripts write when no path is given: benchmarks/runs/, a folder git ignores,
made when a run first writes there. Running a benchmark thus never changes the committed results
in docs/results/, the figures the docs cite; recording a result there is a deliberate act:
its path given, e.g. `--out docs/results/parsing.json` (docs/benchmarks.md). The scripts run
from the checkout's root as `python -m benchmarks.X`."""

import os

RUNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs")


def default_out(name: str) -> str:
    """benchmarks/runs/NAME: the file a run writes by default."""
    return os.path.join(RUNS, name)


def with_folder(path: str) -> str:
    """PATH, its folder made first if missing (benchmarks/runs/ the first time)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return path
