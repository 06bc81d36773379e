"""Training and decoding speed of the registered systems (fairseq_mgsa/systems.py) on identical batches.

Every system's own run (updates/s, tokens/s, peak memory), all of them interleaved on every batch
(paired time ratios), FLOPs and kernel operators per update, decoding, the share of the device's
arithmetic rate: docs/benchmarks.md says what each figure measures. The parts: training/.

    python -m benchmarks.bench_training --arch-size tiny --updates 20
    python -m benchmarks.bench_training --arch-size base --updates 30 --warmup 3 --max-tokens 1024 --readme
    python -m benchmarks.bench_training --arch-size base --updates 200 --warmup 20 --fp16 --repeats 3   # GPU
    python -m benchmarks.bench_training --readme-from docs/results/training_cpu_base.json

Writes benchmarks/runs/training_<device>_<arch-size>.json (or --out), appends a line to
benchmarks/runs/history.jsonl (or --history); --readme rewrites the table of docs/benchmarks.md
(or of the file given, between its bench-training markers) from that JSON.
"""

import argparse
import dataclasses
import json
import logging
import math
import os
import shlex
import shutil
import sys
import tempfile
import time

import torch

from benchmarks.training import data as bdata
from benchmarks import timing
from benchmarks.training import arithmetic, decoding, memory, report, update
from benchmarks.training.env import CpuPeakMemory, copy_throughput
from benchmarks.training.results import assemble, own_run_figures, print_summary, ratios, write
from fairseq_mgsa import systems as registry
from benchmarks.run_outputs import ROOT, default_out

logger = logging.getLogger("bench_training")
TABLE_FILE = os.path.join(ROOT, "docs", "benchmarks.md")


def add_system_options(p):
    """The systems and the batches they train on, as every training benchmark reads them (python -m
    benchmarks.op_counts too): --systems, --define, the corpus, the batch, precision and seed."""
    p.add_argument("--systems", default=",".join(registry.SYSTEMS),
                   help=f"comma-separated, the baseline first is best; registered: {', '.join(registry.SYSTEMS)}")
    p.add_argument("--define", action="append", default=[], metavar="'NAME=SYSTEM ARGS...'",
                   help="add a variant: a registered system plus model options")
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--task", default="mgsa_translation",
                   help="task that makes the batches (every system's); systems with trees need mgsa_translation")
    p.add_argument("--data", help="an existing binarized data directory (with a test split) instead of the "
                                  "generated corpus")
    p.add_argument("--sentences-per-line", type=int, default=1,
                   help="generated corpus: grammar sentences joined into one line (3: WMT-like lengths, ~32 words)")
    p.add_argument("--train-sentences", type=int, help="size of the generated training set (default: enough "
                                                          "for the batches)")
    p.add_argument("--fp16", action="store_true",
                   help="mixed precision: float16 autocast with a GradScaler (fairseq's --amp); on a GPU, or on the "
                        "CPU where torch has float16 kernels (the GPU check's dry run)")
    p.add_argument("--bf16", action="store_true", help="mixed precision: bfloat16 autocast")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, help="torch.set_num_threads (CPU)")


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_system_options(p)
    p.add_argument("--arch-size", choices=registry.SIZES, default="tiny")
    p.add_argument("--updates", type=int, default=50, help="timed updates per system")
    p.add_argument("--warmup", type=int, default=5, help="untimed updates before timing")
    p.add_argument("--own-updates", type=int,
                   help="timed updates of each system's own run (peak memory, wall time; default --updates): "
                        "fewer leave the time to the interleaved run")
    p.add_argument("--repeats", type=int, default=1, help="own runs per system, order rotating; medians")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--rounds", type=int, default=1,
                   help="interleaved timing: rounds over the timed batches at most (each batch's shape warmed first)")
    p.add_argument("--ci-target", type=float, default=0.03,
                   help="stop the rounds once every median speed ratio's 95%% interval is within +-this of it "
                        "(0: run every round)")
    p.add_argument("--no-decode", dest="decode", action="store_false", help="skip the decoding benchmark")
    p.add_argument("--decode-sentences", type=int, default=100, help="generated test split's size")
    p.add_argument("--decode-rounds", type=int, default=5,
                   help="interleaved rounds over the test batches of the decoding timing (paired per batch)")
    p.add_argument("--decode-batch-size", type=int, default=32)
    p.add_argument("--out", help="JSON output (default benchmarks/runs/training_<device>_<arch-size>.json)")
    p.add_argument("--history", default=default_out("history.jsonl"),
                   help="JSON-lines file that gets one line per run (default benchmarks/runs/history.jsonl; "
                        "'' for none)")
    p.add_argument("--readme", nargs="?", const=TABLE_FILE, metavar="FILE",
                   help="rewrite the benchmark table between the bench-training markers of FILE (default "
                        "docs/benchmarks.md) from this run")
    p.add_argument("--readme-from", metavar="JSON", help="only rewrite that table (--readme FILE, default "
                                                         "docs/benchmarks.md) from a result JSON")
    return p


def result_path(device, arch_size):
    """The result JSON's path without --out."""
    return default_out(f"training_{device}_{arch_size}.json")


def resolve_systems(p, a):
    """The systems to run (registry entries, plus the --define variants)."""
    defined = {}
    for d in a.define:
        name, _, rest = d.partition("=")
        words = shlex.split(rest)
        if not name.strip() or not words or words[0] not in registry.SYSTEMS:
            p.error(f"--define {d!r}: expected NAME=SYSTEM ARGS..., SYSTEM one of {', '.join(registry.SYSTEMS)}")
        base = registry.SYSTEMS[words[0]]
        defined[name.strip()] = dataclasses.replace(
            base, name=name.strip(), label=f"{base.label} {' '.join(words[1:])}".strip(),
            model_args=base.model_args + tuple(words[1:]))
    known = {**registry.SYSTEMS, **defined}
    names = [n.strip() for n in a.systems.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        p.error(f"--systems: unknown {unknown}; registered: {', '.join(known)} (or add one with --define)")
    chosen = [known[n] for n in names]
    if a.task != "mgsa_translation" and any(s.needs_trees for s in chosen):
        p.error(f"systems with trees need the phrase fields of --task mgsa_translation (got --task {a.task})")
    return chosen


def check_options(p, a):
    """The systems to run, after the options bench_training and op_counts share are checked (before
    any work: p.error names the option); sets a.amp_dtype, torch's threads and the log's format."""
    chosen = resolve_systems(p, a)
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: no CUDA device")
    if a.fp16 and a.bf16:
        p.error("--fp16 and --bf16: one or the other")
    if a.data and not os.path.isdir(a.data):
        p.error(f"--data {a.data}: no such directory")
    a.amp_dtype = "fp16" if a.fp16 else "bf16" if a.bf16 else None
    if a.threads:
        torch.set_num_threads(a.threads)
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stdout)
    return chosen


def main(argv=None):
    p = get_parser()
    a = p.parse_args(argv)
    a.own_updates = a.own_updates or a.updates
    if a.decode_rounds < 1:
        p.error(f"--decode-rounds must be >= 1 (got {a.decode_rounds})")
    if not 1 <= a.own_updates <= a.updates:
        p.error(f"--own-updates must be in [1, --updates={a.updates}] (got {a.own_updates})")
    if a.readme_from:
        with open(a.readme_from, encoding="utf-8") as f:
            result = json.load(f)
        readme = a.readme or TABLE_FILE
        report.rewrite_readme(readme, result)
        print(f"rewrote the benchmark table of {readme} from {a.readme_from}")
        return
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    chosen = check_options(p, a)
    device = torch.device(a.device)
    if a.rounds < 1:
        p.error(f"--rounds must be >= 1 (got {a.rounds})")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out = a.out or result_path(a.device, a.arch_size)
    result = run(a, chosen, device, out)
    write(a, result, out)
    print_summary(a, result, out)
    if a.readme:
        report.rewrite_readme(a.readme, result)
        print(f"rewrote the benchmark table of {a.readme}")


def run(a, chosen, device, out):
    from fairseq_mgsa import user_dir

    names, baseline = [s.name for s in chosen], registry.BASELINE
    user_dir_path = user_dir.path()  # the imported package: fairseq must not import a second copy
    n_batches = a.warmup + a.updates
    workdir = tempfile.mkdtemp(prefix="mgsa_bench_")
    t_start = time.perf_counter()
    try:
        data, phrases, common, all_args, task, batches = bdata.prepare(a, chosen, workdir, device, n_batches,
                                                                       n_batches, a.decode_sentences)
        pad = task.source_dictionary.pad()
        timed = batches[a.warmup:]
        tokens = sum(bdata.count_tokens(b, pad) for b in timed)
        sentences = bdata.sentences_in(timed)
        logger.info("%d batches (%d warmup + %d timed); timed: %d sentences, %d src+tgt tokens, dictionary %d",
                    len(batches), a.warmup, len(timed), sentences, tokens, len(task.source_dictionary))

        load_start = os.getloadavg()[0]
        copy_start = copy_throughput(device)
        logger.info("copy throughput (256 MB tensor copy, read + write): %.2f GB/s", copy_start)
        mem = CpuPeakMemory() if device.type == "cpu" else None
        # one-time costs (lazy library and kernel initialisation, allocator growth, Triton
        # compilations, autotuning) must land on no system's time or memory figure. On the CPU: one
        # untimed update of every system first (the memory figure is the process's). On a GPU: every
        # system goes untimed over every batch of the own runs first (on the H200, priming the
        # first system alone left the others' own runs paying their own first uses: 1.4-5.1
        # updates/s against 12-15 once warm); memory: max_memory_allocated, reset for each run
        own = batches[:a.warmup + a.own_updates]  # the own runs' batches: the first ones of the list
        primers = [(n, own) for n in names] if device.type == "cuda" else [(n, batches[:1]) for n in names]
        for n, prime in primers:
            update.train_one(all_args[n], task, prime, argparse.Namespace(**{**vars(a), "warmup": len(prime)}),
                             device, mem)
        logger.info("primed: %s", f"{len(own)} untimed updates of every system" if device.type == "cuda"
                    else "one untimed update of every system")
        checkpoints = {n: os.path.join(workdir, "checkpoints", f"{n}.pt") for n in names}
        own_tokens = sum(bdata.count_tokens(b, pad) for b in own[a.warmup:])
        own_sentences = bdata.sentences_in(own[a.warmup:])
        done = {n: 0 for n in names}

        def own_run(n, _):
            done[n] += 1
            save = None
            if a.decode and done[n] == a.repeats:  # the last repeat's model is the one decoded
                def save(model):
                    decoding.save_checkpoint(model, all_args[n], checkpoints[n], len(own))
            res = update.train_one(all_args[n], task, own, a, device, mem, save=save)
            logger.info("[repeat %d/%d] %-24s %7.3f upd/s  %9.0f tok/s  peak %7.0f MB  loss %.3f -> %.3f",
                        done[n], a.repeats, n, a.own_updates / res["seconds"], own_tokens / res["seconds"],
                        res["peak_mem_MB"], res["loss_first"] or 0, res["loss_last"] or 0)
            return res

        # the repeats in an order rotating from repeat to repeat
        runs = timing.interleaved(own_run, names, [None], a.repeats)
        results = {s.name: own_run_figures(s, all_args[s.name], runs[s.name], a, own_tokens, own_sentences)
                   for s in chosen}
        if device.type == "cpu":
            # the own runs' peak depends on the models before them: each one again alone (memory.py)
            for s in chosen:
                r = results[s.name]
                r["peak_mem_MB_in_process"] = r["peak_mem_MB"]
                r["peak_mem_MB"] = memory.measure(common + s.train_args(a.arch_size), bdata.batch_argv(a, common),
                                                  len(own), a)
                logger.info("[memory] %-24s peak %7.0f MB in a process of its own (%.0f MB in this one)",
                            s.name, r["peak_mem_MB"], r["peak_mem_MB_in_process"])

        logger.info("interleaved timing: every batch trains every system, rotating order")
        times = update.train_interleaved(names, all_args, task, batches, a, device, baseline)
        for n, r in results.items():
            r["interleaved_update_s"] = times[n]
            # rounds repeat the timed batches: tokens of one pass, times of every round
            r["tokens_per_s_interleaved"] = tokens * len(times[n]) / len(timed) / sum(times[n])
            r["interleaved_rounds"] = len(times[n]) / len(timed)
            if baseline in times:
                pr = timing.paired(times[n], times[baseline])
                r.update(pr)
                logger.info("[interleaved] %-24s %7.3f upd/s  time ratio median %.3f [IQR %.3f, %.3f]",
                            n, len(times[n]) / sum(times[n]), pr["time_ratio_median"],
                            pr["time_ratio_q1"], pr["time_ratio_q3"])

        for n in names:
            figures = update.flops_per_update(all_args[n], task, batches[0], a, device, count_ops=True)
            ops = figures.pop("ops")
            results[n].update(figures, kernel_ops=ops["kernel_ops"], host_syncs=ops["host_syncs"],
                              ops={k: v for k, v in ops.items() if k != "by_op"})
            logger.info("%-24s %.3f GFLOP per update (forward + backward, first batch); %d kernel operators, "
                        "%d host synchronisations (a second update)", n, results[n]["flops_per_update"] / 1e9,
                        ops["kernel_ops"], ops["host_syncs"])
        rates = arithmetic.shares(results, device, update.amp_dtype(a))
        logger.info("arithmetic rates: %s matmul %.1f TFLOP/s (%s); data sheet %s (%s)", rates["dtype"],
                    rates["matmul_TFLOPs"], rates["matmul_probe"], rates["nominal_TFLOPs"], rates["nominal_source"])
        for n in names:
            r = results[n]
            logger.info("%-24s %.2f TFLOP/s achieved: %.1f%% of the matmul's rate%s", n, r["achieved_TFLOPs"],
                        100 * r["matmul_share"],
                        f", {100 * r['peak_share']:.1f}% of the data sheet's" if r["peak_share"] else "")

        decode_cfg = None
        if a.decode:
            mean_len, n_test = bdata.mean_target_tokens(task, "test")
            length = math.ceil(mean_len - 1)  # without the end-of-sentence token
            decode_cfg = {"sentences": n_test, "length": length, "beam": 4, "rounds": a.decode_rounds,
                          "batch_size": a.decode_batch_size, "reference_mean_tokens": round(mean_len - 1, 2),
                          "checkpoints": f"each system's own run ({len(own)} updates)",
                          "options": "fairseq-generate DATA --gen-subset test --beam 4 --max-len-a 0 "
                                     f"--max-len-b {length} --min-len {length} --batch-size {a.decode_batch_size} "
                                     "--required-batch-size-multiple 1"}
            logger.info("decoding: %d test sentences, hypotheses of %d tokens, FLOPs per generated token, then "
                        "%d interleaved rounds paired per batch", n_test, length, a.decode_rounds)
            for n, d in decoding.measure(chosen, checkpoints, data, user_dir_path, a, device, length,
                                         baseline).items():
                results[n]["decode"] = d
                logger.info("[decode] %-24s %7.1f sentences/s  speed ratio %s", n, d["sentences_per_s"],
                            report.fmt(d.get("speed_ratio_median"), ".3f"))

        ratios(results, baseline, a.arch_size)
        targets = report.check_targets(results, a.arch_size, baseline)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result = assemble(a, chosen, results, targets, decode_cfg, phrases, task, device, out,
                      tokens, sentences, len(timed), time.perf_counter() - t_start)
    result["config"]["own_timed_tokens_src_tgt"] = own_tokens
    result["device"]["copy_GBps"] = {"start": copy_start, "end": copy_throughput(device),
                                     "probe": "256 MB float32 tensor copy, (read + written bytes) / s, "
                                              "median of 5, this process's threads"}
    result["device"]["load_avg_1min"] = {"start": load_start, "end": os.getloadavg()[0]}
    result["device"]["arithmetic"] = rates
    return result


if __name__ == "__main__":
    main()
