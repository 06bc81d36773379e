"""A run's figures: own-run medians, ratios against the baseline, the result JSON, the history
line and the printed summary."""

import datetime
import json
import os
import platform
import shlex
import statistics
import sys

import torch

from fairseq_mgsa import systems as registry

from benchmarks import op_counts

from . import memory, report
from benchmarks.run_outputs import git_info, write_json

from .env import ROOT, CpuPeakMemory, device_info


def own_run_figures(system, args, rs, a, tokens, sentences):
    """The figures of a system's own runs (medians over --repeats)."""
    ups = [a.own_updates / x["seconds"] for x in rs]
    return {
        "label": system.label, "arch": args.arch, "task": args.task, "criterion": args.criterion,
        "train_args": system.train_args(a.arch_size), "net_input_left_out": rs[0]["net_input_left_out"],
        "params": rs[0]["params"], "params_M": rs[0]["params"] / 1e6, "mgsa_params_M": rs[0]["mgsa_params"] / 1e6,
        "updates_per_s": statistics.median(ups), "updates_per_s_runs": ups,
        "updates_per_s_median_step": 1 / statistics.median(x["median_step_s"] for x in rs),
        "tokens_per_s": statistics.median(tokens / x["seconds"] for x in rs),
        "sentences_per_s": statistics.median(sentences / x["seconds"] for x in rs),
        "peak_mem_MB": statistics.median(x["peak_mem_MB"] for x in rs),
        "loss_first": rs[-1]["loss_first"], "loss_last": rs[-1]["loss_last"],
    }


def ratios(results, baseline, arch_size):
    """Ratios against the baseline (None without it). time_ratio: a system's time per update
    over the baseline's, the paired median where the interleaved run was made, else from wall
    times; overhead_ratio = time_ratio / flop_ratio."""
    base = results.get(baseline)
    for n, r in results.items():
        def ratio(key, inverse=False):
            if not base or not base.get(key) or not r.get(key):
                return None
            return base[key] / r[key] if inverse else r[key] / base[key]
        r["param_overhead_M"] = (r["params"] - base["params"]) / 1e6 if base else None
        r["speed_ratio"] = ratio("updates_per_s")
        r["speed_ratio_median_step"] = ratio("updates_per_s_median_step")
        r["tokens_ratio"] = ratio("tokens_per_s")
        r["mem_ratio"] = ratio("peak_mem_MB")
        r["params_ratio"] = ratio("params")
        r["flop_ratio"] = ratio("flops_per_update")
        r["kernel_op_ratio"] = ratio("kernel_ops")
        if r.get("time_ratio_median") is not None:
            r["time_ratio"], r["time_ratio_measure"] = r["time_ratio_median"], "interleaved, paired median"
        else:
            r["time_ratio"] = ratio("updates_per_s", inverse=True)
            r["time_ratio_measure"] = "wall time of the own runs"
        r["overhead_ratio"] = (r["time_ratio"] / r["flop_ratio"]
                               if r["time_ratio"] is not None and r["flop_ratio"] else None)
        # the FLOP ratio is exact: the overhead ratio's interval is the time ratio's, scaled
        r["overhead_ratio_ci95"] = scaled(r.get("time_ratio_ci95"), r["flop_ratio"])
        d, bd = r.get("decode") or {}, (base or {}).get("decode") or {}
        if d.get("decode_flops_per_token") and bd.get("decode_flops_per_token"):
            d["flop_ratio"] = d["decode_flops_per_token"] / bd["decode_flops_per_token"]
            d["time_ratio"] = d.get("decode_time_ratio_median")
            d["time_ratio_ci95"] = d.get("decode_time_ratio_ci95")
            d["overhead_ratio"] = d["time_ratio"] / d["flop_ratio"] if d["time_ratio"] is not None else None
            d["overhead_ratio_ci95"] = scaled(d["time_ratio_ci95"], d["flop_ratio"])
        r["paper"] = report.PAPER.get(arch_size, {}).get(n)


def scaled(interval, flop_ratio):
    return None if interval is None or not flop_ratio else [v / flop_ratio for v in interval]


def assemble(a, chosen, results, targets, profile, decode_cfg, phrases, task, device, out,
             tokens, sentences, n_timed, wall_s):
    import fairseq

    gi = git_info()
    failed = [f"{n}:{t}" for n, checks in targets.items() for t, c in checks.items() if c["pass"] is False]
    command = "python -m benchmarks.bench_training " + shlex.join(
        x for x in sys.argv[1:] if not x.startswith("--readme")) if sys.argv[0].endswith("bench_training.py") else ""
    result = {
        "benchmark": "training and decoding speed of the registered systems, identical batches "
                     "(benchmarks/bench_training.py)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": gi["commit"], "git_dirty": gi["dirty"], "command": command,
        "out": os.path.relpath(os.path.abspath(out), ROOT),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "fairseq": getattr(fairseq, "__version__", "?")},
        "device": device_info(device),
        "config": {
            "arch_size": a.arch_size, "systems": [s.name for s in chosen], "baseline": registry.BASELINE,
            "updates": a.updates, "own_updates": a.own_updates, "warmup": a.warmup, "max_tokens": a.max_tokens, "repeats": a.repeats,
            "interleave": a.interleave, "fp16": bool(a.amp_dtype), "amp_dtype": a.amp_dtype,
            "seed": a.seed, "lr": a.lr, "batch_task": a.task,
            "data": a.data or "generated by mgsa_preprocess.synthetic (gold trees, "
                              f"{a.sentences_per_line} sentence(s) a line), "
                              "mgsa-preprocess --joined-dictionary --trees-suffix tree --levels 3",
            "dictionary_size": len(task.source_dictionary), "phrases": phrases,
            "training_step": "plain loop: the system's fairseq criterion (label smoothing 0.1) forward, backward "
                             "of loss / sample_size, torch.optim.Adam(betas=(0.9, 0.98)) step; batches on the "
                             "device before timing",
            "memory_method": ("torch.cuda.max_memory_allocated (absolute)" if device.type == "cuda"
                              else memory.METHOD),
            "memory_method_in_process": None if device.type == "cuda" else CpuPeakMemory().method,
            "timed_batches": n_timed, "timed_sentences": sentences, "timed_tokens_src_tgt": tokens,
            "flops": "torch.utils.flop_counter.FlopCounterMode, one update (criterion forward + backward) on the "
                     "first batch; counts matrix products, convolutions and attention, not element-wise work",
            "ops": op_counts.RULES,
            "ratios": "speed_ratio: updates/s over the baseline's (own runs, wall time); time_ratio: time per "
                      "update over the baseline's (interleaved: median of the per-batch paired ratios, "
                      "time_ratio_q1/q3 the quartiles); flop_ratio: FLOPs per update over the baseline's; "
                      "kernel_op_ratio: kernel operators per update over the baseline's; "
                      "overhead_ratio = time_ratio / flop_ratio (its ci95: time_ratio_ci95 / flop_ratio, the "
                      "bootstrap over the interleaved batches); decode.flop_ratio: decoding FLOPs per generated "
                      "token over the baseline's; decode.time_ratio: median of the paired per-batch decoding "
                      "times (in-process, interleaved rounds); decode.overhead_ratio = decode.time_ratio / "
                      "decode.flop_ratio",
            "decode": decode_cfg,
        },
        "paper": "Hao et al. 2019 Table 1; their vocabulary differs from ours, compare overheads and ratios",
        "systems": results,
        "targets": {"definition": report.TARGETS, "checks": targets, "failed": failed, "all_pass": not failed},
        "wall_s": round(wall_s, 1),
    }
    if profile:
        result["profile"] = {n: {k: v for k, v in rows.items() if k != "top ops"} for n, rows in profile.items()}
        result["profile_top_ops"] = {n: rows["top ops"] for n, rows in profile.items() if "top ops" in rows}
    return result


HISTORY_KEYS = ("updates_per_s", "speed_ratio", "time_ratio", "time_ratio_q1", "time_ratio_q3", "time_ratio_ci95",
                "speed_ratio_interleaved_median", "speed_ratio_interleaved_ci95", "flop_ratio",
                "overhead_ratio", "overhead_ratio_ci95", "tokens_per_s", "peak_mem_MB", "mem_ratio", "params_M",
                "param_overhead_M", "kernel_ops", "kernel_op_ratio", "host_syncs")
DECODE_HISTORY_KEYS = ("decode_flops_per_token", "flop_ratio", "time_ratio", "time_ratio_ci95", "overhead_ratio",
                       "overhead_ratio_ci95")


def rounded(v):
    if isinstance(v, float):
        return round(v, 4)
    if isinstance(v, list):
        return [rounded(x) for x in v]
    return v


def write(a, result, out):
    """The result JSON (the profile's printed tables left out) and its line of the history."""
    write_json(out, {k: v for k, v in result.items() if k != "profile_top_ops"})
    if a.history:
        c = result["config"]
        line = {"date": result["date"], "git_commit": result["git_commit"], "git_dirty": result["git_dirty"],
                "torch": result["versions"]["torch"], "fairseq": result["versions"]["fairseq"],
                "device": result["device"]["name"], "device_type": result["device"]["type"],
                "copy_GBps": {k: result["device"]["copy_GBps"][k] for k in ("start", "end")},
                "load_avg_1min": result["device"]["load_avg_1min"],
                **{k: c[k] for k in ("arch_size", "updates", "warmup", "max_tokens", "repeats", "interleave", "fp16")},
                "out": result["out"],
                "systems": {n: {**{k: rounded(r.get(k)) for k in HISTORY_KEYS},
                                "flops_per_update": r["flops_per_update"],
                                "decode_sentences_per_s": (r.get("decode") or {}).get("sentences_per_s"),
                                "decode_ratio": (r.get("decode") or {}).get("speed_ratio_median"),
                                **{"decode_" + k.replace("decode_", ""): rounded((r.get("decode") or {}).get(k))
                                   for k in DECODE_HISTORY_KEYS}}
                            for n, r in result["systems"].items()},
                "targets_failed": result["targets"]["failed"]}
        os.makedirs(os.path.dirname(os.path.abspath(a.history)), exist_ok=True)
        with open(a.history, "a") as f:
            f.write(json.dumps(line) + "\n")


def print_summary(a, result, out):
    c, dev, results = result["config"], result["device"], result["systems"]
    print()
    print(f"Training and decoding, {a.arch_size} size, {dev['name']} ({dev['type']}), {a.updates} timed updates "
          f"(+{a.warmup} warmup), max_tokens {a.max_tokens}, {a.repeats} repeat(s), "
          f"{'autocast ' + a.amp_dtype if a.amp_dtype else 'fp32'}; {c['timed_tokens_src_tgt']} src+tgt tokens timed")
    print(f"copy throughput (256 MB tensor copy): {dev['copy_GBps']['start']:.2f} GB/s at the start, "
          f"{dev['copy_GBps']['end']:.2f} GB/s at the end")
    print(report.table(results, a.arch_size))
    print("time ratio: " + ("paired median over the interleaved batches [quartiles]" if a.interleave
                            else "wall time of the own runs") + "; overhead = time ratio / FLOP ratio")
    if c["decode"]:
        d = c["decode"]
        print(f"decoding: {d['command']}, {d['sentences']} sentences, {d['rounds']} interleaved round(s)")
        if d.get("step_rounds"):
            print(f"decoding FLOPs per generated token (FlopCounterMode, whole test split) and time ratio "
                  f"(in-process, paired per batch over {d['step_rounds']} interleaved rounds [95% interval])")
    print(f"peak memory: {c['memory_method']}")
    for n, r in results.items():
        if r["net_input_left_out"]:
            print(f"{n}: its forward takes no {', '.join(r['net_input_left_out'])}: left out of its net_input")
    if a.arch_size in report.PAPER:
        print("paper figures: Hao et al. 2019 Table 1 (different vocabulary: compare overheads and ratios); "
              "the paper has no n-gram + ON-LSTM row: mgsa_ngram_onlstm is set beside full MG-SA")
    print(f"\ntargets ({'all met' if result['targets']['all_pass'] else 'not all met'}):")
    print(report.targets_table(result["targets"]["checks"]))
    for n, rows in (result.get("profile") or {}).items():
        step_ms = rows.get("model + criterion, forward + backward ms")
        print(f"\n{n}: forward + backward, mean of {a.profile_iters} (% of the whole forward + backward)")
        for k, v in rows.items():
            if isinstance(v, float):
                print(f"  {k:60s} {v:9.2f}" + (f"  {100 * v / step_ms:5.1f}%" if step_ms else ""))
            else:
                print(f"  {k:60s} {v:>9}")
        if n in result.get("profile_top_ops", {}):
            print(result["profile_top_ops"][n])
    print(f"\nwrote {out}" + (f" and a line in {a.history}" if a.history else ""))
