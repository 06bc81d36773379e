"""The figures beside the paper's, the targets, the printed tables, and the README's table
(regenerated from a result JSON between its markers)."""

import re

# Hao et al. 2019, Table 1 (WMT14 En-De; params in M, training speed in steps/s), by system.
# Their vocabulary differs from ours: compare overheads and speed ratios, not totals.
FULL_ROW = "+ ON-LSTM interaction (full MG-SA: syntactic + L_tag + ON-LSTM)"
PAPER = {
    "base": {
        "transformer": {"params_M": 88.0, "overhead_M": 0.0, "steps_per_s": 1.28, "row": "Transformer-Base"},
        "mgsa_ngram": {"params_M": 88.4, "overhead_M": 0.4, "steps_per_s": 1.28, "row": "+ n-gram, SANs, layer 1"},
        "mgsa_syntactic": {"params_M": 89.9, "overhead_M": 1.9, "steps_per_s": 1.19, "row": FULL_ROW},
        "mgsa_ngram_onlstm": {"params_M": 89.9, "overhead_M": 1.9, "steps_per_s": 1.19,
                              "row": FULL_ROW + "; the paper has no n-gram + ON-LSTM row, this one has "
                                                "the same modules but the tag classifier"},
    },
    "big": {
        "transformer": {"params_M": 264.1, "overhead_M": 0.0, "row": "Transformer-Big"},
        "mgsa_syntactic": {"params_M": 271.5, "overhead_M": 7.4, "row": "Big + MG-SA (full)"},
        "mgsa_ngram_onlstm": {"params_M": 271.5, "overhead_M": 7.4,
                              "row": "Big + MG-SA (full: syntactic + L_tag + ON-LSTM)"},
    },
}
for _row in PAPER["base"].values():
    _row["speed_ratio"] = round(_row["steps_per_s"] / PAPER["base"]["transformer"]["steps_per_s"], 3)

# Targets, per system: the least speed ratio against the baseline, the most peak memory ratio, the
# most overhead ratio (time ratio / FLOP ratio) in training and decoding, the most relative
# deviation of the parameter overhead from the paper's, where it has one.
MGSA = ("mgsa_ngram", "mgsa_ngram_onlstm", "mgsa_syntactic")
PEERS = ("pba_heterogeneous_convkv", "pba_heterogeneous_queryk", "pba_homogeneous_convkv",
         "pba_interleaved_queryk", "hysan")
TARGETS = {
    "speed_ratio_min": {"mgsa_ngram": 0.98, "mgsa_ngram_onlstm": 0.95, "mgsa_syntactic": 0.95, "hysan": 0.90},
    "mem_ratio_max": {name: 1.10 for name in MGSA},
    "overhead_ratio_max": {name: 1.15 for name in MGSA + PEERS},
    "decode_overhead_ratio_max": {name: 1.15 for name in MGSA + PEERS},
    # kernel operators per update over the baseline's (benchmarks/op_counts): the GPU's cost
    # where a step is launch-bound; PBA's against its FLOP ratio, since it adds arithmetic
    "kernel_op_ratio_max": {name: 1.15 for name in MGSA + ("hysan",)},
    "kernel_op_per_flop_ratio_max": {name: 1.10 for name in PEERS if name.startswith("pba_")},
    # no system makes the host wait for the device more often per update than the baseline
    "host_syncs_at_most_baseline": MGSA + PEERS,
    "overhead_rel_tol": 0.10,
}


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def fmt_ci(ci, spec=".3f"):
    return "" if not ci else f" [{ci[0]:{spec}}, {ci[1]:{spec}}]"


def check(target, value, limit, ci=None, at_least=False):
    """A "value <= limit" target (">=" with at_least); with the value's 95% interval, decided only
    where the interval lies on one side of the limit."""
    lo, hi = ci or (None, None)
    return {"target": target, "value": value, "ci95": ci,
            "decided": None if not ci else (lo >= limit or hi < limit) if at_least else (hi <= limit or lo > limit),
            "pass": None if value is None else value >= limit if at_least else value <= limit}


def render(rows, right_aligned):
    """Rows of strings as aligned columns (the first left-aligned), a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) if i and right_aligned else c.ljust(w)
                       for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    lines.insert(1, "-" * max(map(len, lines)))
    return "\n".join(lines)


def tokens_per_s(r):
    """Source + target tokens/s: of the interleaved run where there was one, else of the own runs."""
    return r.get("tokens_per_s_interleaved") or r["tokens_per_s"]


def check_targets(results, arch_size, baseline):
    """{system: {target: {"target", "value", "pass", ...}}} for the TARGETS; "pass" is None where a
    figure is missing (no baseline, no paper figure for this size)."""
    out = {}
    base_syncs = (results.get(baseline) or {}).get("host_syncs")
    for name, r in results.items():
        if name == baseline:
            continue
        checks, d = {}, r.get("decode") or {}
        speed_min = TARGETS["speed_ratio_min"].get(name)
        if speed_min is not None:  # the interleaved runs' paired median
            checks["speed"] = check(f"speed ratio >= {speed_min}", r.get("speed_ratio_interleaved_median"), speed_min,
                                    r.get("speed_ratio_interleaved_ci95"), at_least=True)
        limit = TARGETS["mem_ratio_max"].get(name)
        if limit is not None:
            checks["memory"] = check(f"peak memory ratio <= {limit}", r["mem_ratio"], limit)
        limit = TARGETS["overhead_ratio_max"].get(name)
        if limit is not None:
            checks["time_per_flop"] = check(f"training overhead ratio (time / FLOPs) <= {limit}",
                                                r.get("overhead_ratio"), limit, r.get("overhead_ratio_ci95"))
        limit = TARGETS["decode_overhead_ratio_max"].get(name)
        if limit is not None and d:
            checks["decode_time_per_flop"] = check(f"decoding overhead ratio (time / FLOPs) <= {limit}",
                                                       d.get("overhead_ratio"), limit, d.get("overhead_ratio_ci95"))
        paper = (r.get("paper") or {}).get("overhead_M")
        if paper is not None:
            tol = TARGETS["overhead_rel_tol"]
            dev = None if r["param_overhead_M"] is None else r["param_overhead_M"] / paper - 1
            checks["param_overhead"] = {"target": f"overhead within {tol:.0%} of the paper's +{paper}M",
                                        "value": r["param_overhead_M"], "relative_deviation": dev,
                                        "pass": None if dev is None else abs(dev) <= tol}
        limit = TARGETS["kernel_op_ratio_max"].get(name)
        if limit is not None:
            checks["kernel_ops"] = check(f"kernel operator ratio <= {limit}", r.get("kernel_op_ratio"), limit)
        limit = TARGETS["kernel_op_per_flop_ratio_max"].get(name)
        if limit is not None:
            value = (r["kernel_op_ratio"] / r["flop_ratio"] if r.get("kernel_op_ratio") is not None
                     and r.get("flop_ratio") else None)
            checks["kernel_ops_per_flop"] = check(f"kernel operator ratio / FLOP ratio <= {limit}", value, limit)
        if name in TARGETS["host_syncs_at_most_baseline"]:
            value = r.get("host_syncs")
            checks["host_syncs"] = {"target": f"host syncs per update <= the baseline's ({fmt(base_syncs, 'd')})",
                                    "value": value, "pass": None if value is None or base_syncs is None
                                    else value <= base_syncs}
        out[name] = checks
    return out


def targets_table(targets):
    rows = [["system", "target", "value", "result"]]
    for name, checks in targets.items():
        for c in checks.values():
            value = fmt(c["value"], "d" if isinstance(c["value"], int) else ".3f")
            if c.get("ci95"):
                value += f" paired median [95% CI {c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}]"
            if c.get("relative_deviation") is not None:
                value += f" ({c['relative_deviation']:+.1%})"
            result = {True: "pass", False: "FAIL", None: "n/a"}[c["pass"]]
            if c.get("decided") is False:
                result += " (within noise: the interval spans the target)"
            rows.append([name, c["target"], value, result])
    return render(rows, right_aligned=False)


# ---------------------------------------------------------------- README

README_START = "<!-- bench-training:start (written by benchmarks/bench_training.py --readme) -->"
README_END = "<!-- bench-training:end -->"
# a GPU run's table has markers of its own, so that it stands beside the CPU one
CUDA_START = "<!-- bench-training-cuda:start (written by benchmarks/bench_training.py --readme) -->"
CUDA_END = "<!-- bench-training-cuda:end -->"


def markers(report):
    return (CUDA_START, CUDA_END) if report["device"]["type"] == "cuda" else (README_START, README_END)


def readme_table(report):
    """The benchmark table (markdown) of docs/benchmarks.md from a result JSON."""
    c, dev = report["config"], report["device"]
    interleaved = any(r.get("time_ratio_q1") is not None for r in report["systems"].values())
    dc, copy, load = c.get("decode") or {}, dev.get("copy_GBps") or {}, dev.get("load_avg_1min") or {}
    where = (f"{dev['type']}, {dev.get('memory_GiB', '?')} GiB, CUDA {dev.get('cuda')}, "
             f"{'autocast ' + c['amp_dtype'] if c.get('amp_dtype') else 'fp32'}" if dev["type"] == "cuda"
             else f"{dev['type']}, {dev.get('threads', '?')} thread(s)")
    lines = [
        f"{c['arch_size'].capitalize()} size, {dev['name']} ({where}), "
        f"copy throughput {fmt(copy.get('start'), '.1f')} / {fmt(copy.get('end'), '.1f')} GB/s (start / end), "
        f"load average {fmt(load.get('start'), '.1f')} / {fmt(load.get('end'), '.1f')}, "
        f"{report['date'][:10]}, commit {(report.get('git_commit') or '?')[:7]}: {c['updates']} timed updates "
        f"(+{c['warmup']} warm-up) of max_tokens {c['max_tokens']} on identical batches"
        + (", all systems interleaved on every batch" if interleaved else "")
        + ("; kernel operators and host synchronisations of one update on the first batch, forward, backward and "
           "Adam with foreach (benchmarks/op_counts)" if any(
               r.get("kernel_ops") is not None for r in report["systems"].values()) else "") + "; "
        + (f"decoding: --beam 4 on {dc['sentences']} test sentences, every hypothesis {dc['length']} tokens "
           f"(--min-len = --max-len-b), {dc.get('step_rounds') or dc['rounds']} interleaved round(s) paired per batch. " if dc else "")
        + f"`{report['command']}`, `{report['out']}`.",
        "",
        "| system | params | FLOPs/update (ratio) | kernel operators/update (ratio) | host syncs/update "
        "| time ratio, paired median [95% CI] | overhead ratio [95% CI] | "
        "tokens/s | peak memory ratio | decoding FLOPs/token (ratio) | decoding time ratio [95% CI] | "
        "decoding overhead ratio [95% CI] | decoding sentences/s (ratio) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in report["systems"].items():
        d = r.get("decode") or {}
        over = "" if r["param_overhead_M"] in (None, 0) else f" ({r['param_overhead_M']:+.2f}M)"
        per_token = d.get("decode_flops_per_token")
        lines.append(
            f"| {r['label']} | {r['params_M']:.2f}M{over} | {r['flops_per_update'] / 1e9:.1f}G "
            f"({fmt(r['flop_ratio'], '.3f')}) | {fmt(r.get('kernel_ops'), ',d')} ({fmt(r.get('kernel_op_ratio'), '.3f')}) "
            f"| {fmt(r.get('host_syncs'), 'd')} | {fmt(r['time_ratio'], '.3f')}{fmt_ci(r.get('time_ratio_ci95'))} "
            f"| {fmt(r['overhead_ratio'], '.3f')}{fmt_ci(r.get('overhead_ratio_ci95'))} "
            f"| {fmt(tokens_per_s(r), '.0f')} | {fmt(r['mem_ratio'], '.3f')} "
            f"| {fmt(per_token and per_token / 1e6, '.1f')}{'M' if per_token else ''} "
            f"({fmt(d.get('flop_ratio'), '.3f')}) "
            f"| {fmt(d.get('time_ratio'), '.3f')}{fmt_ci(d.get('time_ratio_ci95'))} "
            f"| {fmt(d.get('overhead_ratio'), '.3f')}{fmt_ci(d.get('overhead_ratio_ci95'))} "
            f"| {fmt(d.get('sentences_per_s'), '.1f')} ({fmt(d.get('speed_ratio_median'), '.3f')}) |")
    return "\n".join(lines)


def rewrite_readme(path, report):
    """Replaces what is between the markers of the report's device (README_START and README_END;
    CUDA_START and CUDA_END for a GPU run) in `path` by readme_table(report)."""
    start, end = markers(report)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), flags=re.S)
    if not pattern.search(text):
        raise ValueError(f"{path}: no benchmark table markers ({start} ... {end})")
    text = pattern.sub(lambda _: f"{start}\n{readme_table(report)}\n{end}", text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
