"""What mgsa-compare writes: the tables (markdown, terminal), results.json, the plots and
compare-mt's report, from the results of compare.compare()."""

import json
import os
from typing import Dict, List

from fairseq_mgsa.analysis import compare_buckets, compare_plots


def fmt(x, spec=".2f", signed=False) -> str:
    if x is None:
        return "-"
    return f"{x:+{spec}}" if signed else f"{x:{spec}}"


def over_seeds(m, key) -> str:
    """'27.31 ± 0.12' over several seeds, '27.31' for one (no spread claimed)."""
    sd = m[f"{key}_sd"]
    return f"{m[f'{key}_mean']:.2f}" + ("" if sd is None else f" ± {sd:.2f}")


def rows(results: dict) -> List[List[str]]:
    """The main table: header, then one row per system (the baseline first)."""
    valid = any(m.get("valid_curve") for m in results["models"].values())
    header = ["system", "seeds", "BLEU", "Δ BLEU", "p (BLEU)", "p per seed", "against the baseline",
              "chrF", "Δ chrF", "p (chrF)", "exact match %", "params", "train speed ×", "decode speed ×"]
    header += ["valid NLL (bits)"] if valid else []
    out = [header]
    for m in results["models"].values():
        seed_p = "-" if not m["seed_p_values"] or len(m["seed_p_values"]) < 2 else \
            " ".join(f"{p:.3f}" for p in m["seed_p_values"])
        row = [m["label"], str(len(m["bleu"])), over_seeds(m, "bleu"), fmt(m["delta_bleu"], signed=True),
               fmt(m["bleu_p_value"], ".4f"), seed_p, m["verdict"] or "(baseline)",
               over_seeds(m, "chrf"), fmt(m["delta_chrf"], signed=True), fmt(m["chrf_p_value"], ".4f"),
               f"{m['exact_match']:.1f}", "-" if not m["params"] else f"{m['params'] / 1e6:.3f}M",
               fmt(m["train_speed_ratio"]), fmt(m["decode_speed_ratio"])]
        if valid:
            row.append(fmt(m["valid_curve"][-1][1], ".3f") if m.get("valid_curve") else "-")
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


def markdown(table: List[List[str]]) -> str:
    return "\n".join(["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
                     + ["| " + " | ".join(r) + " |" for r in table[1:]])


def notes(results: dict) -> str:
    b = results["models"][results["baseline"]]
    return (f"Baseline: {b['label']}. {results['test_sentences']} test sentences. BLEU and chrF: the mean "
            f"over seeds ± their sample sd (no sd with one seed). p: sacrebleu's paired bootstrap "
            f"({results['bootstrap_samples']} resamples, smallest possible p "
            f"{1 / (results['bootstrap_samples'] + 1):.4f}) on all seeds pooled, and on each seed pair. A system "
            f"is ahead or behind only where p < {results['alpha']} and the difference of the means exceeds the "
            f"two seed sds added; with one seed the verdict rests on p alone and says so. Exact match: "
            f"hypotheses equal to the reference. Speeds are relative to the baseline (fairseq-train's updates "
            f"per wall-clock second, fairseq-generate's sentences/s).")


def markdown_report(results: dict, plot_name: str = "bleu_by_ngram_order.png") -> str:
    return "\n".join([
        markdown(rows(results)), "", notes(results), "",
        "BLEU by n-gram order (the paper's Figure 2): Δ p_n is the gain in modified n-gram precision "
        "over the baseline, Δ BLEU-n in BLEU up to n-grams (means over seeds).", "",
        markdown(ngram_rows(results)), "", f"![BLEU by n-gram order]({plot_name})", "",
        "sacrebleu: " + ", ".join(f"`{sig}`" for sig in results["signature"].values()),
    ])


def terminal_table(results: dict) -> str:
    """The main table in aligned columns, for the terminal."""
    table = rows(results)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines + ["", notes(results)])


def write_all(results: dict, systems: Dict, refs: List[str], out: str, compare_mt: bool = True) -> List[str]:
    """results.json, results.md, the plots and (with compare_mt) compare-mt/index.html in `out`."""
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, f) for f in ("results.json", "results.md", "bleu_by_ngram_order.png")]
    with open(paths[0], "w") as f:
        json.dump(results, f, indent=2)
    with open(paths[1], "w") as f:
        f.write(markdown_report(results) + "\n")
    compare_plots.plot_ngram_orders(results, paths[2])
    if any(m.get("valid_curve") for m in results["models"].values()):
        paths.append(os.path.join(out, "valid_loss.png"))
        compare_plots.plot_valid_curves(results, paths[-1])
    if compare_mt:
        paths.append(compare_buckets.write(systems, refs, results["baseline"], os.path.join(out, "compare-mt")))
    return paths
