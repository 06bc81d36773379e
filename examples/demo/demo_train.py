"""The demo's commands and its training (run_demo.py steps 4-5): every model trained by
fairseq-train under the recipes' stopping rule (fairseq_mgsa.analysis.compare.stopping: validation every
N updates, fairseq's --patience on the validation BLEU or loss, --max-update as the cap), `jobs` at a
time, each with its own progress bar; what every run did is read back from its log."""

import os
import queue
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:  # this checkout's package, also where an older copy is installed
    sys.path.insert(0, ROOT)
from fairseq_mgsa import systems as registry  # noqa: E402
from fairseq_mgsa.analysis import compare  # noqa: E402
from fairseq_mgsa.analysis.compare import stopping  # noqa: E402  (the recipes' rule, written once)
from fairseq_mgsa.analysis.compare.matched import PEER, matched_args  # noqa: E402

USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
# the same optimisation for every model (the options' last occurrence wins: `extra` can override)
OPTIMISATION = ["--label-smoothing", "0.1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "1e-3",
                "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "200", "--dropout", "0.1",
                "--max-tokens", "2048"]


class CommandFailed(Exception):
    pass


def run(cmd, log, total_updates=None, desc=None, position=None, threads=None):
    """Run `cmd`, its output going to `log`; with total_updates, a progress bar follows
    fairseq-train's num_updates. Returns the seconds it took."""
    cmd = [str(c) for c in cmd]
    # this checkout's packages first, also where an older copy is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    bar = tqdm(total=total_updates, desc=desc, unit="upd", leave=True, position=position) if total_updates else None
    t0 = time.time()
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for line in proc.stdout:
            f.write(line)
            m = bar is not None and re.search(r"num_updates[= ](\d+)", line)
            if m:
                bar.update(int(m.group(1)) - bar.n)
        proc.wait()
    if bar is not None:
        bar.close()
    if proc.returncode != 0:
        raise CommandFailed(f"{cmd[0]} failed (exit {proc.returncode}); see {log}")
    return time.time() - t0


def system_args(system: registry.System, dims: Sequence[str]) -> List[str]:
    """The registry's options of `system` at the demo's dimensions `dims` (its base arch); the
    parameter-matched baseline's FFN width is computed for these dimensions (built models)."""
    size_args = system.size_args.get("base", ())
    if size_args:
        if system.name != "transformer_matched":
            raise ValueError(f"system {system.name}: no options at the demo's dimensions for {' '.join(size_args)}")
        peer = registry.get(PEER)
        size_args = matched_args(["--arch", system.arch("base"), *dims],
                                 ["--arch", peer.arch("base"), *dims, *peer.model_args])
    # a depth variant (registry: depth): its share of the demo's layers, given after them
    layers = system.layer_args(int(dims[list(dims).index("--encoder-layers") + 1])) if system.depth else ()
    return ["--task", system.task, "--arch", system.arch("base"), *dims, *size_args, *layers, *system.model_args,
            "--criterion", system.criterion, *system.criterion_args]


@dataclass(frozen=True)
class Rule:
    """The stopping rule every run trains under (metric: stopping.METRICS)."""
    patience: int
    validate_every: int
    max_update: int
    metric: str = "loss"

    def args(self) -> List[str]:
        return stopping.fairseq_args(self.patience, self.validate_every, self.max_update, self.metric)

    def as_dict(self) -> Dict:
        return {"patience": self.patience, "validate_every": self.validate_every, "max_update": self.max_update,
                "metric": self.metric}


@dataclass
class Trained:
    save: str                       # its checkpoints: checkpoint_best.pt is the one decoded
    log: str
    seconds: float                  # fairseq-train's whole run, start-up included
    valid_curve: List[Tuple[int, float]]
    params: Optional[int]
    stop: Dict                      # compare.read_stop: where and why it stopped, its best validation loss

    @property
    def updates_per_second(self) -> Optional[float]:
        updates = self.stop["stopped_at_update"]
        return updates / self.seconds if updates and self.seconds > 0 else None


def train_one(data: str, system: str, seed: int, save: str, log: str, rule: Rule, dims: Sequence[str],
              threads: Optional[int] = None, extra: Sequence[str] = (), desc: Optional[str] = None,
              position: Optional[int] = None) -> Trained:
    """fairseq-train of `system` from scratch (a rerun too) into `save`, under `rule`."""
    shutil.rmtree(save, ignore_errors=True)
    seconds = run(["fairseq-train", data, "--user-dir", USER_DIR, *system_args(registry.get(system), dims),
                   *OPTIMISATION, "--seed", seed, *rule.args(), "--save-dir", save, "--no-epoch-checkpoints",
                   "--keep-interval-updates", "1", "--no-progress-bar", "--log-format", "simple",
                   "--log-interval", "10", "--cpu", *extra],
                  log, total_updates=rule.max_update if desc else None, desc=desc, position=position, threads=threads)
    stop = dict(compare.read_stop(log), run=save)  # the run is its checkpoints' folder (its log is in logs/)
    return Trained(save, log, seconds, compare.read_valid_curve(log), compare.read_params(log), stop)


def threads_per_job(jobs: int, threads: Optional[int] = None) -> int:
    """The CPU threads of each of `jobs` training jobs: `threads`, or the cores shared out."""
    return threads or max(1, (os.cpu_count() or 1) // jobs)


def train_all(models: Dict[Tuple[str, Optional[str], int], str], data: Dict[Optional[str], str], work: str,
              logs: str, rule: Rule, dims: Sequence[str], jobs: int,
              threads: Optional[int] = None) -> Dict[Tuple, Trained]:
    """Every model of `models` ((system, training trees, seed) -> run name), `jobs` at a time
    with `threads` threads each (default: cores / jobs)."""
    threads = threads_per_job(jobs, threads)
    positions = queue.Queue()  # a free line of the terminal for each running job's progress bar
    for i in range(jobs):
        positions.put(i)

    def train(key):
        (system, train_trees, seed), run_name = key, models[key]
        position = positions.get()
        try:
            return key, train_one(data[train_trees], system, seed, os.path.join(work, "checkpoints", run_name),
                                  os.path.join(logs, f"train.{run_name}.log"), rule, dims, threads,
                                  desc=f"[demo] 4/6 train {run_name}", position=position)
        finally:
            positions.put(position)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return dict(pool.map(train, models))


def runs_of(name: str, label: str, hyps: List[List[str]], seeds: Sequence[int], models: Sequence[Trained],
            decode_speeds: Sequence[Optional[float]]) -> "compare.Runs":
    """One row of the table: its hypotheses for every seed, and what its seeds' runs did (where
    each stopped and why, parameters and speeds; the validation curve of the first seed)."""
    return compare.Runs(name, label, hyps, seeds=[str(x) for x in seeds], params=models[0].params,
                        updates_per_second=compare.mean_or_none([m.updates_per_second for m in models]),
                        decode_sentences_per_second=compare.mean_or_none(list(decode_speeds)),
                        valid_curve=models[0].valid_curve, runs=[m.stop for m in models])

