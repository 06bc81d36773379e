"""mgsa-compare: systems against a baseline on one test set, over training seeds.

    mgsa-compare --ref test.de --system transformer=run1/hyp.txt,run2/hyp.txt \\
                 --system mgsa_syntactic=results/mgsa_syntactic_seed1,results/mgsa_syntactic_seed2 --out compare/

Each --system is NAME=PATH[,PATH...], one PATH per training seed: a file of hypotheses (one
a line, in the reference's order) or a run directory as the recipes write it
(results/RUN_NAME: its --hyp-name file, fairseq-generate's generate-test.log or .txt, and the
training log train.log beside it or in ../../checkpoints/RUN_NAME/). The first --system is
the baseline unless --baseline names another.

Written into --out: results.json, results.md (the table, and BLEU by n-gram order as the
paper's Fig. 2), bleu_by_ngram_order.png, and compare-mt's HTML report (compare-mt/index.html:
word accuracy by frequency, sentence BLEU by length, characteristic n-grams, examples).
The table is printed on the terminal too.

Scores are sacrebleu's: BLEU and chrF, and its paired bootstrap resampling (`sacrebleu
--paired-bs`) against the baseline, on each seed pair and on all seeds pooled.
"""

import argparse
import logging
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

ALPHA = 0.05
MAX_ORDER = 8  # n-gram orders 1..8, as the paper's Figure 2


class CompareError(ValueError):
    """Bad input, explained in one line (naming the file)."""


@dataclass
class Runs:
    """One system: its hypotheses for every training seed, and what its runs measured."""
    name: str
    label: str
    hyps: List[List[str]]                      # seeds x sentences
    seeds: List[str] = field(default_factory=list)  # names of the seeds (paths or numbers)
    params: Optional[int] = None
    updates_per_second: Optional[float] = None
    decode_sentences_per_second: Optional[float] = None
    valid_curve: Optional[List[Tuple[int, float]]] = None  # (updates, validation NLL in bits), first seed

    def __post_init__(self):
        if not self.seeds:
            self.seeds = [str(i + 1) for i in range(len(self.hyps))]


# --- reading a user's files -------------------------------------------------------------------

def read_lines(path: str, what: str = "hypotheses") -> List[str]:
    """The lines of `path` (no line dropped; a last line without newline counts)."""
    if not os.path.isfile(path):
        raise CompareError(f"{path}: no such file ({what} expected)")
    with open(path, encoding="utf-8") as f:
        # split on "\n" only: str.splitlines would also split on form feeds and other separators
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_hyps(path: str, n_refs: int, ref_path: str) -> List[str]:
    hyps = read_lines(path)
    if len(hyps) != n_refs:
        line = f"line {n_refs + 1} is one too many" if len(hyps) > n_refs else f"ends at line {len(hyps)}"
        raise CompareError(f"{path}: {len(hyps)} lines, but the reference {ref_path} has {n_refs} "
                           f"({line}; one hypothesis a line, in the reference's order, expected)")
    return hyps


def read_params(train_log: str) -> Optional[int]:
    """The model's parameter count from fairseq-train's log."""
    with open(train_log, encoding="utf-8", errors="replace") as f:
        m = re.search(r"num\. (?:shared )?model params: ([\d,]+)", f.read())
    return int(m.group(1).replace(",", "")) if m else None


def read_training_speed(train_log: str) -> Optional[float]:
    """Updates per second of wall time: the last `num_updates` and `wall` fairseq-train logged."""
    with open(train_log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    updates = re.findall(r"\bnum_updates[ =](\d+)", text)
    wall = re.findall(r"\bwall[ =]([\d.]+)", text)
    return int(updates[-1]) / float(wall[-1]) if updates and wall and float(wall[-1]) > 0 else None


def read_decoding_speed(generate_log: str) -> Optional[float]:
    """fairseq-generate's sentences/s (its 'Translated N sentences ... (X sentences/s' line)."""
    with open(generate_log, encoding="utf-8", errors="replace") as f:
        m = re.search(r"Translated [\d,]+ sentences .*?\(([\d.]+) sentences/s", f.read())
    return float(m.group(1)) if m else None


def read_valid_curve(train_log: str) -> List[Tuple[int, float]]:
    """(num_updates, nll_loss) of every validation in a fairseq-train log (nll_loss: the
    translation loss alone; the syntactic model's tag loss is logged apart)."""
    pattern = re.compile(r"valid on 'valid' subset \| .*?\bnll_loss ([\d.]+) .*?\| num_updates (\d+)")
    with open(train_log, encoding="utf-8", errors="replace") as f:
        return [(int(u), float(nll)) for nll, u in pattern.findall(f.read())]


def mean_or_none(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def read_system(spec: str, refs: List[str], ref_path: str, hyp_name: str) -> Runs:
    """NAME=PATH[,PATH...] -> Runs; a directory PATH is a recipe's run directory."""
    name, sep, paths = spec.partition("=")
    if not sep or not name or not paths:
        raise CompareError(f"--system {spec!r}: NAME=PATH[,PATH...] expected (one path per training seed)")
    hyps, params, train_speed, decode_speed, curve = [], [], [], [], None
    for path in paths.split(","):
        if os.path.isdir(path):
            run = os.path.normpath(path)
            hyps.append(read_hyps(os.path.join(run, hyp_name), len(refs), ref_path))
            logs = [os.path.join(run, "train.log"),
                    os.path.join(os.path.dirname(os.path.dirname(run)), "checkpoints", os.path.basename(run), "train.log")]
            train_log = next((p for p in logs if os.path.isfile(p)), None)
            if train_log:
                params.append(read_params(train_log))
                train_speed.append(read_training_speed(train_log))
                curve = curve or read_valid_curve(train_log)
            # fairseq-generate's speed: in its log (the recipes keep stderr in generate-test.log)
            for generate_log in (os.path.join(run, "generate-test.log"), os.path.join(run, "generate-test.txt")):
                speed = read_decoding_speed(generate_log) if os.path.isfile(generate_log) else None
                if speed:
                    decode_speed.append(speed)
                    break
        else:
            hyps.append(read_hyps(path, len(refs), ref_path))
    return Runs(name, registry_label(name), hyps, seeds=paths.split(","), params=params[0] if params else None,
                updates_per_second=mean_or_none(train_speed), decode_sentences_per_second=mean_or_none(decode_speed),
                valid_curve=curve or None)


def registry_label(name: str) -> str:
    """The registry's label of a system named as in fairseq_mgsa/systems.py, else the name."""
    from fairseq_mgsa import systems
    return systems.SYSTEMS[name].label if name in systems.SYSTEMS else name


# --- scoring ----------------------------------------------------------------------------------

def mean_sd(values: List[float]) -> Tuple[float, Optional[float]]:
    """Mean and sample standard deviation (None for one value: no spread to claim)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def verdict(delta: float, p_value: Optional[float], spread: Optional[float], alpha: float = ALPHA) -> str:
    """Ahead or behind only where p < alpha and the difference of the seeds' means exceeds
    `spread` (the two systems' seed sds added: their mean ± sd intervals do not overlap).
    spread None: a system or the baseline has one seed; the verdict rests on p alone and says so."""
    # delta 0: sacrebleu's bootstrap gives identical outputs its smallest p, not 1
    if p_value is None or p_value >= alpha or delta == 0:
        return "not significantly different"
    side = "ahead" if delta > 0 else "behind"
    if spread is None:
        return f"{side} (p only: one seed, no spread)"
    return side if abs(delta) > spread else "within the seeds' spread"


def ngram_stats(hyps: List[str], refs: List[str], tokenize: str, lowercase: bool, max_order: int):
    """Per order 1..max_order: the modified n-gram precision p_n (clipped matches / hypothesis
    n-grams, unsmoothed) and cumulative BLEU-n, both from sacrebleu's statistics."""
    score = BLEU(max_ngram_order=max_order, tokenize=tokenize, lowercase=lowercase, force=True).corpus_score(hyps, [refs])
    precision = [100.0 * c / t if t else 0.0 for c, t in zip(score.counts, score.totals)]
    bleu_n = [BLEU(max_ngram_order=n, tokenize=tokenize, lowercase=lowercase, force=True).corpus_score(hyps, [refs]).score
              for n in range(1, max_order + 1)]
    return precision, bleu_n


def paired(named_hyps: List[Tuple[str, List[str]]], refs: List[str], metrics: dict, samples: int):
    """sacrebleu's paired bootstrap of every system against the first: {name: (BLEU, chrF) results}."""
    test = PairedTest(named_hyps, metrics, [refs], test_type="bs", n_samples=samples)
    signatures, table = test()
    rows = [table[k] for k in table if k != "System"]  # sacrebleu names chrF "chrF2"
    return signatures, {name: tuple(r[i] for r in rows) for i, (name, _) in enumerate(named_hyps)}


def compare(systems: Dict[str, Runs], refs: List[str], baseline: str, bootstrap_samples: int = 1000,
            tokenize: str = "13a", lowercase: bool = False, max_order: int = MAX_ORDER) -> dict:
    """Every system against `baseline`: scores per seed, mean and sd, paired bootstrap per seed
    pair and pooled, verdict, exact match, n-gram orders, parameters and speed."""
    if baseline not in systems:
        raise CompareError(f"the baseline {baseline!r} is not among the systems ({', '.join(systems)})")
    metrics = {"BLEU": BLEU(tokenize=tokenize, lowercase=lowercase, force=True), "chrF": CHRF(lowercase=lowercase)}
    base, others = systems[baseline], [n for n in systems if n != baseline]
    n_seeds = max(len(s.hyps) for s in systems.values())
    # seed pair i: seed i of a system with seed i of the baseline (its last seed when it has fewer)
    pair = lambda hyps, i: hyps[min(i, len(hyps) - 1)]  # noqa: E731
    per_seed, signatures = [], {}
    for i in range(n_seeds):
        named = [(baseline, pair(base.hyps, i))] + [(n, systems[n].hyps[i]) for n in others if i < len(systems[n].hyps)]
        signatures, results = paired(named, refs, metrics, bootstrap_samples)
        per_seed.append(results)
    # pooled: every seed's sentences as one test set (references repeated), each system's seed
    # paired with the baseline's as above
    pooled = {}
    for n in others:
        k = len(systems[n].hyps)
        named = [(baseline, sum((pair(base.hyps, i) for i in range(k)), [])), (n, sum(systems[n].hyps, []))]
        pooled[n] = paired(named, refs * k, metrics, bootstrap_samples)[1][n] if k > 1 else per_seed[0][n]

    models = {}
    for n, s in systems.items():
        bleu = [per_seed[i][n][0].score for i in range(len(s.hyps))]
        chrf = [per_seed[i][n][1].score for i in range(len(s.hyps))]
        stats = [ngram_stats(h, refs, tokenize, lowercase, max_order) for h in s.hyps]
        (bleu_mean, bleu_sd), (chrf_mean, chrf_sd) = mean_sd(bleu), mean_sd(chrf)
        models[n] = {
            "label": s.label, "seeds": s.seeds,
            "bleu": [round(x, 2) for x in bleu], "bleu_mean": round(bleu_mean, 2),
            "bleu_sd": None if bleu_sd is None else round(bleu_sd, 2),
            "chrf": [round(x, 2) for x in chrf], "chrf_mean": round(chrf_mean, 2),
            "chrf_sd": None if chrf_sd is None else round(chrf_sd, 2),
            "exact_match": round(100.0 * sum(h == r for hyps in s.hyps for h, r in zip(hyps, refs))
                                 / (len(refs) * len(s.hyps)), 1),
            "ngram_precision": [round(sum(p[k] for p, _ in stats) / len(stats), 2) for k in range(max_order)],
            "bleu_n": [round(sum(b[k] for _, b in stats) / len(stats), 2) for k in range(max_order)],
            "params": s.params, "updates_per_second": s.updates_per_second,
            "decode_sentences_per_second": s.decode_sentences_per_second, "valid_curve": s.valid_curve,
        }
    b = models[baseline]
    for n, m in models.items():
        m["ngram_precision_gain"] = [round(x - y, 2) for x, y in zip(m["ngram_precision"], b["ngram_precision"])]
        m["bleu_n_gain"] = [round(x - y, 2) for x, y in zip(m["bleu_n"], b["bleu_n"])]
        for key, ratio in (("updates_per_second", "train_speed_ratio"), ("decode_sentences_per_second", "decode_speed_ratio")):
            m[ratio] = round(m[key] / b[key], 3) if m[key] and b[key] else None
        if n == baseline:
            m.update(bleu_p_value=None, chrf_p_value=None, seed_p_values=None, verdict=None, delta_bleu=None,
                     delta_chrf=None)
            continue
        bleu_p, chrf_p = pooled[n][0].p_value, pooled[n][1].p_value
        spread = None if m["bleu_sd"] is None or b["bleu_sd"] is None else m["bleu_sd"] + b["bleu_sd"]
        delta = round(m["bleu_mean"] - b["bleu_mean"], 2)
        m.update(delta_bleu=delta, delta_chrf=round(m["chrf_mean"] - b["chrf_mean"], 2),
                 bleu_p_value=bleu_p, chrf_p_value=chrf_p,
                 seed_p_values=[per_seed[i][n][0].p_value for i in range(len(systems[n].hyps))],
                 bleu_ci95=pooled[n][0].ci, verdict=verdict(delta, bleu_p, spread))
    return {"baseline": baseline, "bootstrap_samples": bootstrap_samples, "alpha": ALPHA,
            "test_sentences": len(refs), "max_order": max_order,
            "signature": {name: str(sig) for name, sig in signatures.items()}, "models": models}


# --- the command ------------------------------------------------------------------------------

def quiet_other_libraries():
    """Other libraries' logging at WARNING (matplotlib's font manager logs thousands of DEBUG lines
    when something has set the root logger to DEBUG)."""
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("matplotlib", "PIL", "fontTools", "stanza", "urllib3", "absl"):
        logging.getLogger(name).setLevel(logging.WARNING)


def main(argv=None):
    p = argparse.ArgumentParser(prog="mgsa-compare", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[2:]))
    p.add_argument("--ref", required=True, help="the reference translations, one a line")
    p.add_argument("--system", action="append", required=True, metavar="NAME=PATH[,PATH...]",
                   help="a system and its hypothesis files or run directories, one per training seed (repeat)")
    p.add_argument("--baseline", help="the system the others are compared with (default: the first --system)")
    p.add_argument("--out", required=True, help="the output directory (created)")
    p.add_argument("--hyp-name", default="hyp.detok",
                   help="the hypothesis file in a run directory (default: the recipes' detokenized hyp.detok)")
    p.add_argument("--tokenize", default="13a", help="sacrebleu's BLEU tokenizer (none: already tokenized text)")
    p.add_argument("-lc", "--lowercase", action="store_true", help="case-insensitive BLEU and chrF")
    p.add_argument("--bootstrap-samples", type=int, default=1000)
    p.add_argument("--max-order", type=int, default=MAX_ORDER, help="n-gram orders of the breakdown (paper: 8)")
    p.add_argument("--no-compare-mt", action="store_true", help="no compare-mt HTML report")
    a = p.parse_args(argv)
    quiet_other_libraries()
    from fairseq_mgsa.analysis import compare_report
    try:
        refs = read_lines(a.ref, "references")
        if not refs:
            raise CompareError(f"{a.ref}: empty (one reference a line expected)")
        systems = {}
        for spec in a.system:
            s = read_system(spec, refs, a.ref, a.hyp_name)
            if s.name in systems:
                raise CompareError(f"--system {s.name} is given twice")
            systems[s.name] = s
        baseline = a.baseline or next(iter(systems))
        results = compare(systems, refs, baseline, a.bootstrap_samples, a.tokenize, a.lowercase, a.max_order)
    except CompareError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    paths = compare_report.write_all(results, systems, refs, a.out, compare_mt=not a.no_compare_mt)
    print(compare_report.terminal_table(results))
    print(f"[mgsa-compare] written to {os.path.abspath(a.out)}: {', '.join(os.path.basename(x) for x in paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
