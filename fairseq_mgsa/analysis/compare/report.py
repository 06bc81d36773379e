"""What mgsa-compare writes: the tables (markdown, terminal), results.json, the plots and
compare-mt's report, from the results of scoring.compare()."""

import json
import os
from typing import Dict, List

from . import buckets, plots
from .refs import one_for_each
from .scoring import streams


def fmt(x, spec=".2f", signed=False) -> str:
    if x is None:
        return "-"
    return f"{x:+{spec}}" if signed else f"{x:{spec}}"


def over_seeds(m, key) -> str:
    """'27.31 ± 0.12' over several seeds, '27.31' for one (no spread claimed)."""
    sd = m[f"{key}_sd"]
    return f"{m[f'{key}_mean']:.2f}" + ("" if sd is None else f" ± {sd:.2f}")


def unequal(results: dict, m: dict) -> bool:
    """Whether a system's seeds are not all paired with the baseline's (or the other way)."""
    return m.get("seed_pairs") is not None and len(m["bleu"]) != len(results["models"][results["baseline"]]["bleu"])


def seeds_cell(results: dict, m: dict) -> str:
    """'3', or '1 (1 pair)' where the seed counts differ: Δ, p and the verdict are on the pairs."""
    if not unequal(results, m):
        return str(len(m["bleu"]))
    return f"{len(m['bleu'])} ({m['seed_pairs']} pair{'s' if m['seed_pairs'] > 1 else ''})"


def run_cells(m: dict, bleu: bool) -> List[str]:
    """Where the runs stopped (per seed), their best validation loss (and BLEU) and training
    minutes (means over seeds), and whether a cap cut them while still improving."""
    runs = m.get("runs") or []
    if not runs:
        return ["-"] * (5 if bleu else 4)
    stopped = " ".join("-" if r["stopped_at_update"] is None else str(r["stopped_at_update"]) for r in runs)
    mean = lambda key: mean_or_none([r[key] for r in runs])  # noqa: E731
    capped = sum(r["capped"] for r in runs)
    cut = "yes" if capped == len(runs) else f"{capped} of {len(runs)}" if capped else "no" + why_not(runs)
    cells = [stopped, fmt(mean("best_valid_loss"), ".3f")]
    cells += [fmt(mean("best_valid_bleu"))] if bleu else []
    return cells + [fmt(mean("train_minutes"), ".1f"), cut]


def why_not(runs: List[dict]) -> str:
    """' (early stop)', ' (not improving)', ' (unfinished)', ...: why no run is marked, when all agree."""
    def why(r):
        if r["stop"].startswith("early stop"):
            return "early stop"
        if r["stop"] in ("unfinished", "stop-min-lr"):
            return r["stop"]
        return "not improving" if r["improving_at_end"] is False else "no validation"
    reasons = {why(r) for r in runs}
    return f" ({reasons.pop()})" if len(reasons) == 1 else ""


def mean_or_none(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def rows(results: dict) -> List[List[str]]:
    """The main table: header, then one row per system (the baseline first)."""
    models = results["models"].values()
    valid = any(m.get("valid_curve") for m in models)
    runs = any(m.get("runs") for m in models)
    valid_bleu = any(r["best_valid_bleu"] is not None for m in models for r in m.get("runs") or [])
    refs = n_refs_cell(results)
    header = ["system", "seeds", "BLEU" + refs, "Δ BLEU", "p (BLEU)", "p per seed", "against the baseline",
              "chrF" + refs, "Δ chrF", "p (chrF)", "exact match %", "params", "train speed ×", "decode speed ×"]
    header += ["valid NLL (bits)"] if valid else []
    header += (["stopped at", "best valid loss"] + (["best valid BLEU"] if valid_bleu else [])
               + ["train min", "cut by cap"]) if runs else []
    out = [header]
    for m in models:
        seed_p = "-" if not m["seed_p_values"] or len(m["seed_p_values"]) < 2 else \
            " ".join(f"{p:.3f}" for p in m["seed_p_values"])
        row = [m["label"], seeds_cell(results, m), over_seeds(m, "bleu"), fmt(m["delta_bleu"], signed=True),
               fmt(m["bleu_p_value"], ".4f"), seed_p, m["verdict"] or "(baseline)",
               over_seeds(m, "chrf"), fmt(m["delta_chrf"], signed=True), fmt(m["chrf_p_value"], ".4f"),
               f"{m['exact_match']:.1f}", "-" if not m["params"] else f"{m['params'] / 1e6:.3f}M",
               fmt(m["train_speed_ratio"]), fmt(m["decode_speed_ratio"])]
        if valid:
            row.append(fmt(m["valid_curve"][-1][1], ".3f") if m.get("valid_curve") else "-")
        if runs:
            row += run_cells(m, valid_bleu)
        out.append(row)
    return out


def ngram_rows(results: dict) -> List[List[str]]:
    """BLEU by n-gram order (the paper's Fig. 2): each order's precision gain over the baseline,
    then cumulative BLEU-n's."""
    orders = range(1, results["max_order"] + 1)
    out = [["system"] + [f"Δ p{n}" for n in orders] + [f"Δ BLEU-{n}" for n in orders]]
    for name, m in results["models"].items():
        if name != results["baseline"]:
            out.append([m["label"]] + [fmt(x, signed=True) for x in m["ngram_precision_gain"]]
                       + [fmt(x, signed=True) for x in m["bleu_n_gain"]])
    return out


def subset_rows(results: dict) -> List[List[str]]:
    """The test set's subsets (results["subsets"], scoring.subset) beside the whole: BLEU (mean
    ± sd over seeds) and exact match per system."""
    subsets = results.get("subsets") or {}
    header = ["system", f"BLEU (all {results['test_sentences']})", "exact match % (all)"]
    for name, sub in subsets.items():
        header += [f"BLEU ({name}, {sub['sentences']})", f"exact match % ({name})"]
    out = [header]
    for n, m in results["models"].items():
        row = [m["label"], over_seeds(m, "bleu"), f"{m['exact_match']:.1f}"]
        for sub in subsets.values():
            s = sub["models"][n]
            row += ["-" if s["bleu_mean"] is None else over_seeds(s, "bleu"), fmt(s["exact_match"], ".1f")]
        out.append(row)
    return out


def subset_notes(results: dict) -> str:
    """One sentence per subset: how many test sentences it holds and what they are."""
    n = results["test_sentences"]
    return " ".join(f"{sub['sentences']} of the {n} test sentences ({100 * sub['sentences'] / n:.1f}%) are {name}: "
                    f"{sub['description']}." for name, sub in (results.get("subsets") or {}).items())


def markdown(table: List[List[str]]) -> str:
    return "\n".join(["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
                     + ["| " + " | ".join(r) + " |" for r in table[1:]])


def n_refs_cell(results: dict) -> str:
    """' (4 refs)' beside BLEU and chrF where the scores used several references."""
    k = results.get("n_refs", 1)
    return f" ({k} refs)" if k > 1 else ""


def reference_notes(results: dict) -> str:
    """How many references every figure used, which, and which one compare-mt's report used."""
    k, names = results.get("n_refs", 1), results.get("references")
    fewer = results.get("sentences_with_fewer_references") or 0
    out = (f" {k} reference{'s' if k > 1 else ''}" + (f" ({', '.join(names)})" if names else "")
           + (", every figure with all of them (sacrebleu's multi-reference BLEU and chrF)" if k > 1 else "")
           + (f"; {fewer} sentences have fewer (a reference without that sentence)" if fewer else "") + ".")
    used = results.get("compare_mt_reference")
    if used:
        out += f" compare-mt's report takes one reference: {used}."
    return out


def notes(results: dict) -> str:
    b = results["models"][results["baseline"]]
    return (f"Baseline: {b['label']}. {results['test_sentences']} test sentences." + reference_notes(results) +
            f" BLEU and chrF: the mean "
            f"over seeds ± their sample sd (no sd with one seed). p: sacrebleu's paired bootstrap "
            f"({results['bootstrap_samples']} resamples, smallest possible p "
            f"{1 / (results['bootstrap_samples'] + 1):.4f}) on all seed pairs pooled, and on each seed pair (seed i "
            f"with the baseline's seed i). A system is ahead or behind only where p < {results['alpha']} and the "
            f"difference of the means exceeds the two seed sds added; a system with one seed against several (or "
            f"the other way) only where p < {results['alpha']} and that seed's BLEU lies outside the other's seed range "
            f"(inside it, however small the pair's p); with one seed on both sides the verdict rests on p alone and says so. Exact match: hypotheses equal to "
            f"{'one of the references' if results.get('n_refs', 1) > 1 else 'the reference'}"
            f"{' but for case (--lowercase, as BLEU and chrF)' if results.get('lowercase') else ''}. Speeds are relative to the baseline (fairseq-train's updates "
            f"per wall-clock second, fairseq-generate's sentences/s)." + unequal_notes(results) + run_notes(results))


def unequal_notes(results: dict) -> str:
    """One sentence per system whose seed count differs from the baseline's."""
    base = results["models"][results["baseline"]]
    out = ""
    for m in results["models"].values():
        if unequal(results, m):
            n, k = len(m["bleu"]), m["seed_pairs"]
            out += (f" {m['label']} has {n} seed{'s' if n > 1 else ''} and the baseline {len(base['bleu'])}: its Δ, p "
                    f"and verdict compare seed i with the baseline's seed i for the {k} seed pair{'s' if k > 1 else ''} "
                    f"both have (seed{'s' if k > 1 else ''} {', '.join(str(i + 1) for i in range(k))}), so its Δ is "
                    f"not the difference of the BLEU column's means.")
    return out


def run_notes(results: dict) -> str:
    if not any(m.get("runs") for m in results["models"].values()):
        return ""
    return stopping_rule(results) + (" From fairseq-train's logs: stopped at: each seed's last update; best valid loss: the lowest "
            "validation loss (fairseq's `loss`, bits), mean over seeds; train min: fairseq's \"done training\" "
            "time summed over the log's sessions (the clock of its lines for a session without one), less the "
            "pauses between its lines (a stopped process). Cut by cap: yes where fairseq-train stopped at its cap "
            "(--max-update, --max-epoch or --stop-time-hours) while its last validation was still its best: more "
            "training would likely change the result; no where --patience stopped it (early stop), its validation "
            "had stopped improving, or it did not finish.")


def stopping_rule(results: dict) -> str:
    """The rule the runs were trained under, where the caller recorded it (results["stopping"])."""
    rule = results.get("stopping")
    if not rule:
        return ""
    score = rule_score(rule)
    return (f" Every run validated every {rule['validate_every']} updates and stopped when its {score} had "
            f"not improved for {rule['patience']} validations in a row (fairseq's --patience), or at the cap of "
            f"{rule['max_update']} updates; the checkpoint with the best {score} was decoded.")


def rule_score(rule: dict) -> str:
    """What the stopping rule watches (fairseq_mgsa/analysis/compare/stopping.py's metric)."""
    return ("validation BLEU (greedy decoding, fairseq's --eval-bleu)" if rule.get("metric") == "bleu"
            else "validation loss")


def markdown_report(results: dict, plot_name: str = "bleu_by_ngram_order.png") -> str:
    return "\n".join([
        markdown(rows(results)), "", notes(results), "",
        *([markdown(subset_rows(results)), "", subset_notes(results), ""] if results.get("subsets") else []),
        "BLEU by n-gram order (the paper's Figure 2): Δ p_n is the gain in modified n-gram precision "
        "over the baseline, Δ BLEU-n in BLEU up to n-grams (means over seeds).", "",
        markdown(ngram_rows(results)), "", f"![BLEU by n-gram order]({plot_name})", "",
        "sacrebleu: " + ", ".join(f"`{sig}`" for sig in results["signature"].values()),
    ])


def aligned(table: List[List[str]]) -> List[str]:
    """A table in aligned columns, a rule under its header."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "-" * len(lines[0]))
    return lines


def terminal_table(results: dict) -> str:
    """The main table in aligned columns, for the terminal (and the subsets' table, if any)."""
    out = aligned(rows(results)) + ["", notes(results)]
    if results.get("subsets"):
        out += [""] + aligned(subset_rows(results)) + ["", subset_notes(results)]
    return "\n".join(out)


def write_all(results: dict, systems: Dict, refs, out: str, compare_mt: bool = True,
              lowercase: bool = False) -> List[str]:
    """results.json, results.md, the plots and (with compare_mt) compare-mt/index.html in `out`.
    `refs` as scoring.compare takes them: one reference, or a list of several; compare-mt reads
    one, the first (results["compare_mt_reference"] says which)."""
    if compare_mt:
        ref, elsewhere = one_for_each(streams(refs))
        if results.get("n_refs", 1) > 1:
            first = (results.get("references") or ["reference 1"])[0]
            results["compare_mt_reference"] = (
                f"the first, {first}" + (f" (for the {elsewhere} sentences it lacks, each one's first reference)"
                                         if elsewhere else ""))
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, f) for f in ("results.json", "results.md", "bleu_by_ngram_order.png")]
    with open(paths[0], "w") as f:
        json.dump(results, f, indent=2)
    with open(paths[1], "w") as f:
        f.write(markdown_report(results) + "\n")
    plots.plot_ngram_orders(results, paths[2])
    if any(m.get("valid_curve") for m in results["models"].values()):
        paths.append(os.path.join(out, "valid_loss.png"))
        plots.plot_valid_curves(results, paths[-1])
    if compare_mt:
        paths.append(buckets.write(systems, ref, results["baseline"], os.path.join(out, "compare-mt"), lowercase,
                                   results.get("compare_mt_reference")))
    return paths
