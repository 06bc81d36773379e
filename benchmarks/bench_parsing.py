"""Parsing throughput of ``--parser stanza`` with a parser trained by ``mgsa-train-parser``, offline.

Each setting runs in fresh worker processes that load the parser as mgsa-preprocess does and time
``parse_lines`` over their line range (docs/benchmarks-parser.md, "Parsing throughput"): one process
at ``--threads`` 1 and 2 and several stanza batch sizes, then ``--shards`` N processes at once, each
its contiguous range (sentences/s per process = sentences / parsing time / N). Writes
``benchmarks/runs/parsing.json`` (or ``--out``), with the hours 4.5M sentences (WMT14 en-de) take.

    python -m benchmarks.bench_parsing --model /tmp/mgsa-bench-parser/defaults
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

from benchmarks.run_outputs import ROOT, default_out, load_average, write_json

WMT = 4_500_000


def worker(a):
    import torch

    torch.set_num_threads(a.threads)
    from mgsa_preprocess.parse import StanzaParser, parse_lines

    parser = StanzaParser("xx", device="cpu", model_dir=a.model, batch_size=a.batch_size, threads=a.threads)
    with open(a.input) as f:
        warm = [line.split() for _, line in zip(range(20), f)]
    parser.parse(warm)
    t0 = time.perf_counter()
    n = parse_lines(parser, a.input, a.output, style="none", start=a.start, end=a.end, progress=False)
    print(json.dumps({"sentences": n, "seconds": time.perf_counter() - t0}))


def quick_model(work: str) -> str:
    from mgsa_preprocess.synthetic.ptb_shaped import write_treebank

    data, out = os.path.join(work, "treebank3000"), os.path.join(work, "parser")
    write_treebank(data, (("train", 3000), ("dev", 400), ("test", 0)), seed=1)
    subprocess.run([sys.executable, "-m", "mgsa_preprocess.parser_training.train_parser", "--train", os.path.join(data, "train.mrg"),
                    "--dev", os.path.join(data, "dev.mrg"), "--out", out, "--parser-epochs", "1", "--tagger-steps",
                    "50", "--quiet"], check=True)
    return out


def worker_command(a, threads: int, batch_size: int, start: int, end: int, output: str):
    """(command, environment) of one worker process of a setting, parsing lines [start, end): this
    module again, run as a module with the checkout on the path (it imports the benchmarks package)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    return [sys.executable, "-m", "benchmarks.bench_parsing", "--worker", "--model", a.model, "--input", a.input,
            "--output", output, "--threads", str(threads), "--batch-size", str(batch_size), "--start", str(start),
            "--end", str(end)], env


def measure(a, threads: int, batch_size: int, processes: int) -> dict:
    n_lines = sum(1 for _ in open(a.input))
    workers = [worker_command(a, threads, batch_size, n_lines * i // processes, n_lines * (i + 1) // processes,
                              os.path.join(a.work, f"parsed.{i}")) for i in range(processes)]
    load_before = load_average()
    t0 = time.perf_counter()
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) for cmd, env in workers]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    wall = time.perf_counter() - t0  # includes loading; the rate below uses the parsing time only
    n = sum(o["sentences"] for o in outs)
    parse_wall = max(o["seconds"] for o in outs)
    rate = n / parse_wall / processes
    r = {"threads": threads, "batch_size": batch_size, "processes": processes, "sentences": n,
         "parse_seconds": round(parse_wall, 2), "wall_seconds_with_loading": round(wall, 1),
         "sentences_per_second_per_process": round(rate, 1), "load_before": load_before,
         "load_after": load_average(),
         "hours_for_4.5M_sentences": {str(k): round(WMT / (rate * k) / 3600, 1) for k in (1, 8, 32, 128)}}
    print(f"threads {threads}, batch {batch_size:4d}, {processes} process(es): {rate:6.1f} sentences/s per process "
          f"(load {r['load_after']}); 4.5M sentences: {r['hours_for_4.5M_sentences']['1']} h on one process, "
          f"{r['hours_for_4.5M_sentences']['32']} h on 32", flush=True)
    return r


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", help="a directory written by mgsa-train-parser (default: train one here on the "
                                    "generated treebank's 3,000 training trees: the default model's size, one "
                                    "epoch, as parsing speed depends on the model's size, not its training)")
    p.add_argument("--input", help="sentences, one a line (default: the generated treebank's test words)")
    p.add_argument("--work", default="/tmp/mgsa-bench-parsing")
    p.add_argument("--batch-sizes", default="32,256,1000")
    p.add_argument("--shards", type=int, default=2, help="processes for the sharded run")
    p.add_argument("--out", default=default_out("parsing.json"),
                   help="JSON output (default benchmarks/runs/parsing.json)")
    # worker mode (one process of a setting)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--output", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--batch-size", type=int, default=256, help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--end", type=int, help=argparse.SUPPRESS)
    return p


def main():
    a = get_parser().parse_args()
    if a.worker:
        return worker(a)
    os.makedirs(a.work, exist_ok=True)
    if a.input is None:
        from mgsa_preprocess.synthetic.ptb_shaped import write_treebank

        write_treebank(os.path.join(a.work, "treebank"), (("train", 0), ("dev", 0), ("test", 400)), seed=1)
        a.input = os.path.join(a.work, "treebank", "test.txt")
    if a.model is None:
        a.model = quick_model(a.work)
    sizes = [int(b) for b in a.batch_sizes.split(",")]
    results = [measure(a, 1, b, 1) for b in sizes]
    best = max(results, key=lambda r: r["sentences_per_second_per_process"])["batch_size"]
    results.append(measure(a, 2, best, 1))
    results.append(measure(a, 1, best, a.shards))
    with open(os.path.join(a.model, "mgsa_parser.json")) as f:
        record = json.load(f)
    write_json(a.out, {"benchmark": "stanza parsing with an mgsa-train-parser model (StanzaParser + parse_lines)",
                       "input": a.input, "model": {"dir": a.model, "train_trees": record.get("train_trees"),
                                                   "dev": record.get("dev"), "bytes": record.get("bytes")},
                       "machine": {"python": platform.python_version(), "cores": os.cpu_count(),
                                   "note": "shared machine: see each run's load averages (1, 5, 15 min)"},
                       "results": results})
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
