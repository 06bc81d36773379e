"""The check's report from OUT/results.jsonl and the benchmark's JSON: a table per phase, then the
summary table, one row a phase, last. Whatever a cut run left is reported as it is: a run
that started and has no result was cut (or crashed), a phase that never ran is missing."""

import glob
import json
import os

from . import records
from .runs import phase_runs

PHASES = ("env", "data", "fp16", "variants", "invariants", "bench", "bench_big")
BENCH_FILES = {"bench": "training_*.json", "bench_big": "bench_big_*.json"}  # scripts/gpu_check.sh's --out


def fmt(v, spec=".3f"):
    return "-" if v is None else format(v, spec) if isinstance(v, (int, float)) else str(v)


def table(rows):
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def run_rows(recs, phase):
    results = {r["name"]: r for r in recs if r.get("kind") == "run" and r["phase"] == phase}
    started = {r["name"] for r in recs if r.get("kind") == "start" and r["phase"] == phase}
    rows = [("run", "ran as", "updates", "loss first -> last", "valid loss", "overflow skips", "loss scale",
             "hypotheses", "BLEU", "train s", "status")]
    counts = {"pass": 0, "FAIL": 0, "cut": 0, "not run": 0}
    for run in phase_runs(phase):
        r = results.get(run.name)
        if r is None:
            status = "cut" if run.name in started else "not run"
            counts[status] += 1
            rows.append((run.name, *["-"] * 9, status))
            continue
        counts[r["status"]] += 1
        rows.append((run.name, r["ran_as"].split(" ")[0], f"{r['updates_done']}/{r['updates']}",
                     f"{fmt(r['loss_first'])} -> {fmt(r['loss_last'])}", fmt(r["valid_loss"]), r["overflow_skips"],
                     fmt(r["loss_scale_last"], "g"), f"{fmt(r.get('hypotheses'), 'd')}/{fmt(r.get('test_lines'), 'd')}",
                     fmt(r.get("bleu"), ".1f"), fmt(r["train_s"], ".1f"),
                     r["status"] + ("" if not r["problems"] else ": " + "; ".join(r["problems"]))))
    return rows, counts


def invariant_rows(recs):
    rows = [("system", "dtype", "device", "padding", "incremental", "tolerance", "backward", "cosine",
             "backward tolerance", "status")]
    counts = {"pass": 0, "FAIL": 0}
    for r in recs:
        if r.get("kind") != "invariant":
            continue
        counts[r["status"]] += 1
        rows.append((r["system"], r["dtype"], r["device"], fmt(r.get("padding"), ".2e"),
                     fmt(r.get("incremental"), ".2e"), fmt(r.get("tolerance"), "g"), fmt(r.get("backward"), ".2e"),
                     fmt(r.get("backward_cosine"), ".5f"), fmt(r.get("backward_tolerance"), "g"),
                     r["status"] + (": " + r["error"] if r.get("error") else "")))
    return rows, counts


def bench_result(out, phase):
    paths = sorted(glob.glob(os.path.join(out, BENCH_FILES[phase])))
    if not paths:
        return None
    with open(paths[-1], encoding="utf-8") as f:
        return json.load(f)


def bench_rows(out):
    result = bench_result(out, "bench")
    if result is None:
        return None, None
    rows = [("system", "params", "own upd/s", "paired speed ratio", "time ratio [IQR]", "FLOP ratio", "overhead",
             "peak MB", "mem ratio")]
    for name, r in result["systems"].items():
        rows.append((name, f"{r['params_M']:.1f}M", fmt(r["updates_per_s"], ".2f"),
                     fmt(r.get("speed_ratio_interleaved_median", r.get("speed_ratio"))), time_ratio(r),
                     fmt(r.get("flop_ratio")), fmt(r.get("overhead_ratio")), fmt(r["peak_mem_MB"], ".0f"),
                     fmt(r.get("mem_ratio"))))
    return rows, result


def time_ratio(r):
    return (f"{fmt(r.get('time_ratio'))} [{fmt(r.get('time_ratio_q1'))}, {fmt(r.get('time_ratio_q3'))}]"
            if r.get("time_ratio_q1") is not None else fmt(r.get("time_ratio")))


def pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def bench_big_rows(out):
    """The realistic-batch benchmark: ratios and each system's share of the arithmetic rates."""
    result = bench_result(out, "bench_big")
    if result is None:
        return None, None
    rows = [("system", "params", "ms/update", "TFLOP/update", "TFLOP/s", "of data sheet", "of matmul",
             "paired speed ratio", "time ratio [IQR]", "FLOP ratio", "overhead")]
    for name, r in result["systems"].items():
        times = r.get("interleaved_update_s")
        ms = 1000 * sorted(times)[len(times) // 2] if times else None
        rows.append((name, f"{r['params_M']:.1f}M", fmt(ms, ".0f"), fmt(r.get("flops_per_update", 0) / 1e12, ".2f"),
                     fmt(r.get("achieved_TFLOPs"), ".1f"), pct(r.get("peak_share")), pct(r.get("matmul_share")),
                     fmt(r.get("speed_ratio_interleaved_median")), time_ratio(r), fmt(r.get("flop_ratio")),
                     fmt(r.get("overhead_ratio"))))
    return rows, result


def summary(out):
    """(the report's text, whether every phase ran to its end and everything passed)."""
    recs = records.read(out)
    phases = {r["phase"]: r for r in recs if r.get("kind") == "phase"}
    env = next((r for r in recs if r.get("kind") == "env"), {})
    lines = [f"GPU check in {out}: " + (f"{env.get('gpu') or 'CPU'}, python {env.get('python')}, torch "
                                       f"{env.get('torch')}, fairseq {env.get('fairseq')}"
                                       + (" (DRY RUN: CPU, tiny dimensions)" if env.get("dry_run") else "")
                                       if env else "no environment record")]
    # each phase's work is sized to end within 75% of its limit (scripts/gpu_check.sh)
    final = [("phase", "result", "seconds", "limit s", "75% of limit s", "time / 75% of limit", "status")]
    ok = True

    def phase_row(name, result, passed):
        nonlocal ok
        p = phases.get(name)
        if p is None:
            status = "not run"
        elif p["cut"]:
            status = "CUT by its time limit"
        elif p["rc"] != 0 and passed:
            status = f"FAIL (exit {p['rc']})"
        else:
            status = "pass" if passed else "FAIL"
        ok &= status == "pass"
        budget = p and 0.75 * p["limit_s"]
        final.append((name, result, fmt(p and p["seconds"], "d"), fmt(p and p["limit_s"], "d"), fmt(budget, ".1f"),
                      pct(p and p["seconds"] / budget) + ("" if not p or p["seconds"] <= budget else " (over)"),
                      status))

    for name in ("env", "data"):
        phase_row(name, "ok" if any(r.get("kind") == name for r in recs) else "-",
                  any(r.get("kind") == name for r in recs))
    for phase in ("fp16", "variants"):
        rows, counts = run_rows(recs, phase)
        lines += ["", f"{phase}: fairseq-train then fairseq-generate", table(rows)]
        phase_row(phase, ", ".join(f"{v} {k}" for k, v in counts.items() if v) or "-",
                  counts["pass"] == len(rows) - 1)
    rows, counts = invariant_rows(recs)
    if len(rows) > 1:
        lines += ["", "invariants: incremental decoding with beam reorders = the full forward; padding "
                      "(left, right, alone); largest difference relative to the largest logit; backward: one training "
                      "step's gradient (flattened) against float32's, error relative to its length, and "
                      "their cosine", table(rows)]
    phase_row("invariants", f"{counts['pass']} pass, {counts['FAIL']} FAIL" if len(rows) > 1 else "-",
              len(rows) > 1 and counts["FAIL"] == 0)
    rows, result = bench_rows(out)
    if rows:
        c = result["config"]
        lines += ["", f"bench: {result['device']['name']}, {c['arch_size']} size, "
                      f"{'autocast ' + str(c.get('amp_dtype')) if c['fp16'] else 'fp32'}, {c['updates']} timed "
                      f"updates; paired speed ratio: median over the batches of the Transformer's time / the "
                      f"system's; time ratio: of the system's / the Transformer's, [quartiles]; overhead = time ratio / FLOP ratio; peak memory: "
                      f"{c['memory_method']}", table(rows)]
    phase_row("bench", f"{len(rows) - 1} systems" if rows else "-", rows is not None)
    rows, result = bench_big_rows(out)
    if rows:
        c, rates = result["config"], result["device"].get("arithmetic") or {}
        lines += ["", f"bench_big: {result['device']['name']}, {c['arch_size']} size, autocast {c.get('amp_dtype')}, "
                      f"{c['max_tokens']}-token batches of {c['timed_tokens_src_tgt'] / 2 / c['timed_sentences']:.1f} "
                      f"tokens a side on average, {c['updates']} timed updates; achieved = FLOPs per update / "
                      f"median update time; shares of the data sheet's {fmt(rates.get('nominal_TFLOPs'), '.0f')} "
                      f"TFLOP/s ({rates.get('nominal_source')}) and of a measured {rates.get('matmul_probe')}: "
                      f"{fmt(rates.get('matmul_TFLOPs'), '.1f')} TFLOP/s", table(rows)]
    phase_row("bench_big", f"{len(rows) - 1} systems" if rows else "-", rows is not None)
    over = [row[0] for row in final[1:] if row[5].endswith("(over)")]
    lines += ["", "summary: " + ("every phase ran and passed" if ok else "NOT every phase passed")
              + (f"; over 75% of its time limit: {', '.join(over)}" if over else "; every phase that ran within 75% "
                 "of its time limit"), table(final)]
    return "\n".join(lines), ok


def main(argv=None):
    """python -m tests.gpu.check.summary --out OUT: the report; exit 0 when every phase passed."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m tests.gpu.check.summary", description=main.__doc__)
    p.add_argument("--out", required=True, help="the check's output folder")
    text, ok = summary(p.parse_args(argv).out)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
