"""Scoring, significance, table, plots and README section of the demo (run_demo.py).

Scores are sacrebleu's (BLEU, chrF, and its paired bootstrap resampling against the
baseline); plots are matplotlib's.
"""

import json
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import matplotlib

matplotlib.use("Agg")  # files only, no screen
import matplotlib.pyplot as plt  # noqa: E402
from cycler import cycler  # noqa: E402
from sacrebleu.metrics import BLEU, CHRF  # noqa: E402
from sacrebleu.significance import PairedTest  # noqa: E402

# solid lines in the 10 colours first, then dashed: one look per system, up to 20
LINES = cycler(linestyle=["-", "--"]) * cycler(color=plt.cm.tab10.colors)
MAX_ORDER = 8  # BLEU-1 .. BLEU-8, as the paper's Figure 2
README_START = "<!-- demo-results:start (written by examples/demo/run_demo.py) -->"
README_END = "<!-- demo-results:end -->"


@dataclass
class Run:
    name: str
    label: str
    hyps: List[str]
    refs: List[str]
    valid_curve: List[Tuple[int, float]]  # (updates, validation NLL in bits per token)
    train_minutes: float
    system: str = ""  # the trained system (a row is a system + the trees it saw)
    trees: Optional[Tuple[str, str]] = None  # source trees at (training, test): "gold" or "parser"
    params: Optional[int] = None
    updates_per_second: Optional[float] = None  # fairseq-train's wall time (other jobs may have run beside it)
    decode_sentences_per_second: Optional[float] = None  # fairseq-generate's own figure, beam 4
    seed_bleu: Optional[Dict[int, float]] = None  # BLEU of every training seed, when there are several


def corpus_bleu(hyps: List[str], refs: List[str]) -> float:
    return round(BLEU(force=True).corpus_score(hyps, [refs]).score, 2)


def read_params(train_log: str) -> Optional[int]:
    """The model's parameter count from fairseq-train's log."""
    with open(train_log) as f:
        m = re.search(r"num\. (?:shared )?model params: ([\d,]+)", f.read())
    return int(m.group(1).replace(",", "")) if m else None


def read_decoding_speed(generate_log: str) -> Optional[float]:
    """fairseq-generate's sentences/s (its 'Translated N sentences ... (X sentences/s' line)."""
    with open(generate_log) as f:
        m = re.search(r"Translated [\d,]+ sentences .*?\(([\d.]+) sentences/s", f.read())
    return float(m.group(1)) if m else None


def verdict(delta: float, p_value: Optional[float], alpha: float = 0.05) -> str:
    """Whether a system is ahead of the baseline: only a difference with p < alpha counts."""
    # delta 0: sacrebleu's bootstrap gives identical outputs its smallest p, not 1
    if p_value is None or p_value >= alpha or delta == 0:
        return "not significantly different"
    return "ahead" if delta > 0 else "behind"


def read_generate(path: str, expected: int) -> Tuple[List[str], List[str]]:
    """Hypotheses and references from fairseq-generate output, in the test set's order;
    every test sentence must be there."""
    hyps, refs = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("H-"):
                i, _, text = line.rstrip("\n").split("\t")
                hyps[int(i[2:])] = text
            elif line.startswith("T-"):
                i, text = line.rstrip("\n").split("\t")
                refs[int(i[2:])] = text
    if sorted(hyps) != list(range(expected)) or sorted(refs) != list(range(expected)):
        raise ValueError(f"{path}: {len(hyps)} hypotheses and {len(refs)} references for {expected} test sentences")
    return [hyps[i] for i in range(expected)], [refs[i] for i in range(expected)]


def read_valid_curve(train_log: str) -> List[Tuple[int, float]]:
    """(num_updates, nll_loss) of every validation in a fairseq-train log. nll_loss is the
    translation loss alone (the syntactic model's tag loss is logged apart)."""
    pattern = re.compile(r"valid on 'valid' subset \| .*?\bnll_loss ([\d.]+) .*?\| num_updates (\d+)")
    with open(train_log) as f:
        return [(int(u), float(nll)) for nll, u in pattern.findall(f.read())]


def score(runs: Dict[str, Run], baseline: str, bootstrap_samples: int) -> dict:
    refs = runs[baseline].refs
    names = [baseline] + [n for n in runs if n != baseline]
    # paired bootstrap resampling (Koehn 2004), as `sacrebleu --paired-bs`. force=True: the
    # corpus is the grammar's own space-separated text, no detokenized reference exists.
    test = PairedTest([(n, runs[n].hyps) for n in names], {"BLEU": BLEU(force=True), "chrF": CHRF()}, [refs],
                      test_type="bs", n_samples=bootstrap_samples)
    signatures, table = test()
    bleu_rows, chrf_rows = (table[k] for k in table if k != "System")  # sacrebleu names chrF "chrF2"
    models = {}
    for i, n in enumerate(names):
        bleu, chrf = bleu_rows[i], chrf_rows[i]
        base_bleu_n = [BLEU(max_ngram_order=k, force=True).corpus_score(runs[baseline].hyps, [refs]).score
                       for k in range(1, MAX_ORDER + 1)]
        bleu_n = [BLEU(max_ngram_order=k, force=True).corpus_score(runs[n].hyps, [refs]).score for k in range(1, MAX_ORDER + 1)]
        models[n] = {
            "label": runs[n].label,
            "system": runs[n].system or n,
            "trees": None if runs[n].trees is None else {"train": runs[n].trees[0], "test": runs[n].trees[1]},
            "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
            "bleu_p_value": bleu.p_value, "chrf_p_value": chrf.p_value,
            "bleu_bootstrap_mean": bleu.mean, "bleu_bootstrap_ci95": bleu.ci,
            "exact_match": round(100.0 * sum(h == r for h, r in zip(runs[n].hyps, refs)) / len(refs), 1),
            "bleu_n_gap": [round(x - y, 2) for x, y in zip(bleu_n, base_bleu_n)],
            "final_valid_nll": runs[n].valid_curve[-1][1] if runs[n].valid_curve else None,
            "valid_curve": runs[n].valid_curve,
            "train_minutes": round(runs[n].train_minutes, 1),
            "params": runs[n].params,
            "updates_per_second": runs[n].updates_per_second,
            "decode_sentences_per_second": runs[n].decode_sentences_per_second,
            "seed_bleu": runs[n].seed_bleu,
        }
    base = models[baseline]
    for n, m in models.items():
        m["verdict"] = None if n == baseline else verdict(m["bleu"] - base["bleu"], m["bleu_p_value"])
        for key, ratio in (("updates_per_second", "train_speed_ratio"),
                           ("decode_sentences_per_second", "decode_speed_ratio")):
            m[ratio] = round(m[key] / base[key], 3) if m[key] and base[key] else None
        if m["seed_bleu"]:
            values = list(m["seed_bleu"].values())
            mean = sum(values) / len(values)
            m["seed_bleu_mean"] = round(mean, 2)
            m["seed_bleu_sd"] = round((sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5, 2)
    return {"baseline": baseline, "bootstrap_samples": bootstrap_samples,
            "signature": {name: str(sig) for name, sig in signatures.items()},
            "models": models}


def fmt_p(p) -> str:
    return "-" if p is None else f"{p:.4f}"


def fmt_ratio(r) -> str:
    return "-" if r is None else f"{r:.2f}"


def markdown_table(results: dict) -> str:
    base = results["models"][results["baseline"]]
    seeds = any(m.get("seed_bleu") for m in results["models"].values())
    lines = ["| model | trees (train / test) | BLEU | Δ BLEU | p (BLEU) | against the baseline | chrF | Δ chrF | p (chrF) "
             "| exact match % | valid NLL (bits) | params | train speed × | decode speed ×"
             + (" | BLEU over seeds, mean ± sd |" if seeds else " |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if seeds else "")]
    for name, m in results["models"].items():
        nll = "-" if m["final_valid_nll"] is None else f"{m['final_valid_nll']:.3f}"
        if name == results["baseline"]:
            d_bleu = p_bleu = d_chrf = p_chrf = ""
        else:
            d_bleu, d_chrf = f"{m['bleu'] - base['bleu']:+.2f}", f"{m['chrf'] - base['chrf']:+.2f}"
            p_bleu, p_chrf = fmt_p(m["bleu_p_value"]), fmt_p(m["chrf_p_value"])
        trees = "-" if not m.get("trees") else f"{m['trees']['train']} / {m['trees']['test']}"
        params = "-" if not m.get("params") else f"{m['params'] / 1e6:.3f}M"
        train, decode = (fmt_ratio(m.get(k)) for k in ("train_speed_ratio", "decode_speed_ratio"))
        over_seeds = ""
        if seeds:
            over_seeds = (f" {m['seed_bleu_mean']:.2f} ± {m['seed_bleu_sd']:.2f} ({len(m['seed_bleu'])} seeds) |"
                          if m.get("seed_bleu") else " - |")
        lines.append(f"| {m['label']} | {trees} | {m['bleu']:.2f} | {d_bleu} | {p_bleu} | {m.get('verdict') or ''} "
                     f"| {m['chrf']:.2f} | {d_chrf} | {p_chrf} | {m['exact_match']:.1f} | {nll} | {params} "
                     f"| {train} | {decode} |{over_seeds}")
    return "\n".join(lines)


def plot_bleu_gain(results: dict, path: str) -> None:
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set_prop_cycle(LINES)
    orders = list(range(1, MAX_ORDER + 1))
    for name, m in results["models"].items():
        if name != results["baseline"]:
            ax.plot(orders, m["bleu_n_gap"], marker="o", label=m["label"])
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("N (BLEU up to N-grams)")
    ax.set_ylabel("BLEU-N gap to the baseline")
    ax.set_title("Improvement by n-gram order (as the paper's Figure 2)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)  # beside the plot: many systems
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_valid_curves(results: dict, path: str) -> None:
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set_prop_cycle(LINES)
    for m in results["models"].values():
        if m["valid_curve"] and (m.get("trees") or {}).get("test") in (None, (m.get("trees") or {}).get("train")):
            # a model tested on other trees than it was trained on has its training row's curve
            updates, nll = zip(*m["valid_curve"])
            ax.plot(updates, nll, marker=".", label=m["label"])
    ax.set_xlabel("updates")
    ax.set_ylabel("validation NLL (bits per token)")
    ax.set_yscale("log")
    ax.set_title("Validation loss")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)  # beside the plot: many systems
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(results: dict, runs: Dict[str, Run], work: str) -> Dict[str, str]:
    paths = {k: os.path.join(work, f) for k, f in (("json", "results.json"), ("md", "results.md"),
                                                   ("gain", "bleu_gain_by_ngram.png"),
                                                   ("curves", "valid_loss.png"))}
    with open(paths["json"], "w") as f:
        json.dump(results, f, indent=2)
    with open(paths["md"], "w") as f:
        f.write(markdown_table(results) + "\n")
    plot_bleu_gain(results, paths["gain"])
    plot_valid_curves(results, paths["curves"])
    return paths


def readme_section(results: dict, docs_rel: str) -> str:
    s = results["setup"]
    models = results["models"]
    better = [f"{m['label']} {m['bleu'] - models[results['baseline']]['bleu']:+.2f} BLEU (p = {fmt_p(m['bleu_p_value'])})"
              for n, m in models.items() if n != results["baseline"]]
    parser = results.get("parser")
    if parser:
        t = parser["test"]
        parser_text = [
            "",
            f"Parser trees: `mgsa-train-parser` trained stanza's tagger and parser on the {parser['train_trees']} gold "
            f"training trees ({parser['tagger_steps']} tagger steps, {parser['parser_epochs']} parser epochs: "
            f"{parser['train_minutes']} min, {parser['megabytes']} MB); on the test set its labeled bracket F1 is "
            f"{t['f1']:.2f} (precision {t['precision']:.2f}, recall {t['recall']:.2f}; {t['exact_match']:.1f}% of the "
            f"trees exact), scored by preprocess/bracket_score.py. Rows marked gold read the grammar's own trees, "
            f"which tell the PP attachment the source string alone does not: they show what syntax is worth with "
            f"an oracle parser. Rows marked parser read the trees this parser gives, as a user's data would.",
        ]
    else:
        parser_text = []
    return "\n".join([
        README_START,
        f"Last run: {s['train_sentences']} training and {s['test_sentences']} test sentences from the grammar, "
        f"{s['max_update']} updates per model (seed {s['seed']}), {s['minutes']} minutes in all. "
        f"Against the baseline: {'; '.join(better)}. p-values: sacrebleu's paired bootstrap "
        f"({results['bootstrap_samples']} resamples, so {1 / (results['bootstrap_samples'] + 1):.4f} is the smallest "
        f"p it can give), and a system counts as ahead or behind only where p < 0.05; exact match: hypotheses "
        f"equal to the reference. Speeds are relative to the baseline: training by fairseq-train's wall time "
        f"({s.get('jobs', 1)} models trained at once, so only a rough guide: `benchmarks/bench_training.py` times "
        f"the systems on identical batches), decoding by fairseq-generate's sentences/s (beam 4, one at a time)."
        + (f" BLEU over seeds: the same data and budget with training seeds {', '.join(map(str, s['seeds']))} "
           f"(the bootstrap p covers test-set sampling only, the seeds' spread covers training)."
           if len(s.get("seeds", [])) > 1 else ""),
        *parser_text,
        "",
        markdown_table(results),
        "",
        f"![BLEU gain by n-gram order]({docs_rel}/bleu_gain_by_ngram.png) "
        f"![validation loss]({docs_rel}/valid_loss.png)",
        "",
        "sacrebleu: " + ", ".join(f"`{sig}`" for sig in results["signature"].values()),
        README_END,
    ])


def update_readme(readme: str, results: dict, docs_rel: str) -> None:
    with open(readme) as f:
        text = f.read()
    if README_START not in text or README_END not in text:
        raise ValueError(f"{readme}: no results section between {README_START!r} and {README_END!r}")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    with open(readme, "w") as f:
        f.write(head + readme_section(results, docs_rel) + tail)
