"""Time of ``mgsa-train-parser`` on a treebank of the Penn Treebank's shape, and the dev F1 per epoch.

The treebank is generated (preprocess/synthetic/ptb_shaped.py; by default 3,000 training and 400 dev
trees, a WSJ section split's size); the command runs as a user runs it, and the figures are read from
the model directory (docs/benchmarks-parser.md, "Training a parser", says which). One entry per
``--name`` in ``benchmarks/runs/parser_training.json`` (or ``--out``).

    python -m benchmarks.bench_parser_training --name defaults
    python -m benchmarks.bench_parser_training --name old-defaults --stop-after-epochs 1 -- \\
        --parser-batch-size 10 --parser-epochs 20
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time


from mgsa_preprocess.synthetic.ptb_shaped import write_treebank
from benchmarks.run_outputs import default_out, load_average as load, write_json


def run(a, extra) -> dict:
    data = os.path.join(a.work, "treebank")
    summary = write_treebank(data, (("train", a.train_trees), ("dev", a.dev_trees), ("test", a.test_trees)), a.seed)
    out = os.path.join(a.work, a.name)
    cmd = [sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser", "--train", os.path.join(data, "train.mrg"),
           "--dev", os.path.join(data, "dev.mrg"), "--out", out, "--quiet", *extra]
    print(" ".join(cmd), flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    load_before, t0 = load(), time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    epochs_seen, stopped = 0, False
    for line in proc.stdout:
        print(line, end="", flush=True)
        if "] parser epoch " in line:
            epochs_seen += 1
            if a.stop_after_epochs and epochs_seen >= a.stop_after_epochs:
                proc.terminate()  # the epochs so far are in parser_epochs.jsonl
                stopped = True
                break
    proc.wait()
    if proc.returncode and not stopped:
        raise SystemExit(f"mgsa-train-parser failed ({proc.returncode})")
    return figures(a, extra, out, summary, load_before, time.time() - t0, stopped)


def figures(a, extra, out, summary, load_before, wall, stopped) -> dict:
    with open(os.path.join(out, "training", "parser_epochs.jsonl")) as f:
        epochs = [json.loads(line) for line in f]
    with open(os.path.join(out, "mgsa_parser.json")) as f:
        record = json.load(f)
    epoch_s = [e["train_seconds"] + e["dev_seconds"] for e in epochs]
    mean = sum(epoch_s) / len(epoch_s)
    n_epochs = int(extra[extra.index("--parser-epochs") + 1]) if "--parser-epochs" in extra else None
    result = {
        "args": extra, "treebank": summary, "stopped_after_epochs": len(epochs) if stopped else None,
        "load_before": load_before, "load_after": load(), "wall_seconds": round(wall),
        "tagger_seconds": record.get("tagger_seconds"),
        "parser_setup_seconds": epochs[0]["setup_seconds"] if epochs else None,
        "epochs": [{k: e[k] for k in ("epoch", "dev_f1", "train_seconds", "dev_seconds")} for e in epochs],
        "mean_epoch_seconds": round(mean, 1),
        "epoch_seconds_per_1000_trees": round(mean / a.train_trees * 1000, 1),
        "dev_share_of_epoch": round(sum(e["dev_seconds"] for e in epochs) / sum(epoch_s), 3),
    }
    if not stopped:
        result.update(parser_seconds=record["parser_seconds"], total_seconds=record["seconds"], final_dev=record["dev"],
                      model_bytes=record["bytes"])
    elif n_epochs:
        result["extrapolated_parser_seconds"] = round(result["parser_setup_seconds"] + mean * n_epochs)
    return result


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                epilog="arguments after -- go to mgsa-train-parser")
    p.add_argument("--name", required=True, help="entry name in the results file (and the model directory's)")
    p.add_argument("--work", default="/tmp/mgsa-bench-parser", help="treebank and model directories")
    p.add_argument("--train-trees", type=int, default=3000)
    p.add_argument("--dev-trees", type=int, default=400)
    p.add_argument("--test-trees", type=int, default=400)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--stop-after-epochs", type=int, help="stop the run after this many parser epochs")
    p.add_argument("--out", default=default_out("parser_training.json"),
                   help="JSON file the run's entry is added to (default benchmarks/runs/parser_training.json)")
    return p


def main():
    p = get_parser()
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    result = run(a, extra)
    results = {}
    if os.path.exists(a.out):
        with open(a.out) as f:
            results = json.load(f)
    results.setdefault("runs", {})[a.name] = result
    results["machine"] = {"python": platform.python_version(), "cores": os.cpu_count(),
                          "note": "shared machine: see each run's load averages (1, 5, 15 min)"}
    write_json(a.out, results)
    print(f"{a.name}: {result['mean_epoch_seconds']} s per epoch ({result['epoch_seconds_per_1000_trees']} s per "
          f"1,000 trees), dev F1 by epoch {[e['dev_f1'] for e in result['epochs']]}, load {result['load_after']} "
          f"-> {a.out}")


if __name__ == "__main__":
    main()
