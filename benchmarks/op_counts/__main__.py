"""Kernel operators and host-device synchronisations per training update of the registered systems, counted on
the CPU in a minute: the part of benchmarks/bench_training.py that predicts GPU time where a step is launch-bound,
on its corpus and first batch. docs/benchmarks.md, "Operators and synchronisations", has the rules and figures.

    python -m benchmarks.op_counts --arch-size base --systems transformer,hysan
    python -m benchmarks.op_counts --arch-size base --where --top 15 --by-module 20 --systems mgsa_syntactic

Writes benchmarks/runs/op_counts_<device>_<arch-size>.json (or --out).
"""

import argparse
import datetime
import logging
import os
import platform
import shutil
import sys
import tempfile
import time

import torch

from benchmarks import bench_training, op_counts
from benchmarks.training import data as bdata
from benchmarks.training import update
from benchmarks.run_outputs import default_out, write_json
from benchmarks.training.env import device_info
from benchmarks.training.report import fmt, render
from fairseq_mgsa import systems as registry

logger = logging.getLogger("op_counts")


def get_parser():
    p = argparse.ArgumentParser(prog="python -m benchmarks.op_counts", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_training.add_system_options(p)
    p.add_argument("--arch-size", choices=registry.SIZES, default="base")
    p.add_argument("--batches", type=int, default=55,
                   help="batches the generated corpus is sized for (bench_training.py's --warmup + --updates; "
                        "the first batch depends on it)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--where", action="store_true", help="list each system's synchronisations by source line")
    p.add_argument("--top", type=int, default=0, help="list each system's N most frequent kernel operators")
    p.add_argument("--by-module", type=int, default=0, metavar="N",
                   help="count the kernel operators by the innermost module running them (forward and backward, "
                        "torch's ModuleTracker) and list each system's N modules with the most, with their top operators")
    p.add_argument("--out", help="the JSON output (default benchmarks/runs/op_counts_<device>_<arch-size>.json)")
    return p


def result_path(device, arch_size):
    """The JSON's path without --out."""
    return default_out(f"op_counts_{device}_{arch_size}.json")


def measure(a, chosen, device):
    """{system: FLOPs and operator counts of one update on the first batch} and the batch's size."""
    workdir = tempfile.mkdtemp(prefix="mgsa_ops_")
    try:
        _, _, _, all_args, task, [batch] = bdata.prepare(a, chosen, workdir, device, 1, a.batches, 8)
        pad = task.source_dictionary.pad()
        size = {"sentences": int(batch["nsentences"]), "tokens_src_tgt": bdata.count_tokens(batch, pad),
                "src_len": batch["net_input"]["src_tokens"].size(1), "tgt_len": batch["target"].size(1)}
        results = {}
        for s in chosen:
            t0 = time.perf_counter()
            r = update.flops_per_update(all_args[s.name], task, batch, a, device, count_ops=True,
                                       by_module=bool(a.by_module))
            results[s.name] = {"label": s.label, **r}
            logger.info("%-24s %6d kernel operators, %3d host syncs (%.1f s)", s.name, r["ops"]["kernel_ops"],
                        r["ops"]["host_syncs"], time.perf_counter() - t0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    op_counts.ratios(results, registry.BASELINE)
    return results, size


def table(results):
    rows = [["system", "kernel ops", "ratio", "forward", "backward", "optimizer", "host syncs", "FLOP ratio",
             "ops ratio / FLOP ratio"]]
    for name, r in results.items():
        o = r["ops"]
        rows.append([name, str(o["kernel_ops"]), fmt(r.get("kernel_op_ratio"), ".2f"),
                     *(str(o["by_phase"].get(p, {}).get("kernel_ops", 0)) for p in op_counts.PHASES),
                     str(o["host_syncs"]), fmt(r.get("flop_ratio"), ".2f"),
                     fmt(r.get("kernel_op_ratio") and r.get("flop_ratio") and r["kernel_op_ratio"] / r["flop_ratio"],
                         ".2f")])
    return render(rows, right_aligned=True)


def main(argv=None):
    p = get_parser()
    a = p.parse_args(argv)
    chosen = bench_training.check_options(p, a)
    device = torch.device(a.device)
    t0, load_start = time.perf_counter(), os.getloadavg()[0]
    results, size = measure(a, chosen, device)
    print(f"\nKernel operators and host synchronisations of one training update, {a.arch_size} size, first batch "
          f"({size['sentences']} sentences, {size['tokens_src_tgt']} src+tgt tokens, max_tokens {a.max_tokens}), "
          f"{'autocast ' + a.amp_dtype if a.amp_dtype else 'fp32'}, counted on {device.type}")
    print(table(results))
    for name, r in results.items():
        o = r["ops"]
        if a.where and o["sync_sites"]:
            print(f"\n{name}: {o['host_syncs']} host synchronisations")
            for site, n in o["sync_sites"].items():
                print(f"  {n:4d}  {site}")
        if a.top:
            print(f"\n{name}: the {a.top} most frequent kernel operators")
            for op, n in list(o["by_op"].items())[: a.top]:
                print(f"  {n:5d}  {op}")
        if a.by_module:
            print(f"\n{name}: the {a.by_module} modules running the most kernel operators (forward / backward)")
            for module, m in list(o["by_module"].items())[: a.by_module]:
                top = ", ".join(f"{op} {n}" for op, n in list(m["ops"].items())[:6])
                print(f"  {m['kernel_ops']:5d}  {m.get('forward', 0):4d} / {m.get('backward', 0):4d}  {module}: {top}")
    a.out = a.out or result_path(device.type, a.arch_size)
    result = {
        "benchmark": "kernel operators and host synchronisations per training update (python -m benchmarks.op_counts)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python -m benchmarks.op_counts " + " ".join(sys.argv[1:] if argv is None else argv),
        "versions": {"python": platform.python_version(), "torch": torch.__version__},
        "device": {**device_info(device), "load_avg_1min": {"start": load_start, "end": os.getloadavg()[0]}},
        "config": {"arch_size": a.arch_size, "max_tokens": a.max_tokens, "batch": size, "seed": a.seed,
                   "amp_dtype": a.amp_dtype, "baseline": registry.BASELINE, "counts": op_counts.RULES},
        "systems": results, "wall_s": round(time.perf_counter() - t0, 1)}
    print(f"\nwrote {write_json(a.out, result)}")


if __name__ == "__main__":
    main()
