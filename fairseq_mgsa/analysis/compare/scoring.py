"""mgsa-compare's scores: sacrebleu's BLEU and chrF, and its paired bootstrap resampling
(`sacrebleu --paired-bs`) against the baseline, on each seed pair and on all seed pairs pooled;
the verdict; exact match; BLEU by n-gram order (the paper's Figure 2). Every figure is taken
with all the references of the test set, by sacrebleu's own multi-reference scoring.

Seeds are paired: seed i of a system with seed i of the baseline, for the seeds both have
(k = the smaller of the two counts). Δ, p and the verdict are all taken on those k pairs, so
the verdict agrees with the test it cites; a system's BLEU and chrF columns are over all its
own seeds. Why not all seeds: a paired test needs one baseline output per system output, and
repeating one side's seed would count one training run's luck several times; every seed
against every seed costs n x m times the memory of sacrebleu's bootstrap, which already holds
resamples x sentences x statistics at once (chrF, 3 seed pairs of 3,000 sentences: 1,000 x
9,000 x 18 float32, 0.65 GB).
"""

import math
from typing import Dict, List, Optional, Sequence, Tuple, Union

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from .runs import CompareError, Runs

ALPHA = 0.05
MAX_ORDER = 8  # n-gram orders 1..8, as the paper's Figure 2

# One reference (a line per sentence), or several (a list of them, each in sentence order; None
# where a reference has nothing for a sentence): sacrebleu's own multi-reference scoring takes them.
References = Union[List[str], List[List[Optional[str]]]]


def streams(refs: References) -> List[List[Optional[str]]]:
    """The references as sacrebleu takes them: a list of references, each a line per sentence."""
    if refs and not isinstance(refs[0], str) and refs[0] is not None:
        return [list(r) for r in refs]
    return [list(refs)]


def mean_sd(values: List[float]) -> Tuple[float, Optional[float]]:
    """Mean and sample standard deviation (None for one value: no spread to claim)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def verdict(delta: float, p_value: Optional[float], spread: Optional[float], alpha: float = ALPHA,
            one: str = "seed", seed_range: Optional[Tuple[str, float, float, bool]] = None) -> str:
    """Ahead or behind only where p < alpha and the difference lies beyond the seeds' spread:
    with several seeds on both sides, the difference of the means exceeds `spread` (the two
    systems' seed sds added: their mean ± sd intervals do not overlap); with one seed on one
    side and several on the other, `seed_range` = (whose, lowest, highest, inside): the one
    seed's BLEU must lie outside the other side's seed range, whatever the one pair's p says
    (inside it, the pair's difference is one of the differences between seeds of one system).
    With one seed on both sides (spread and seed_range None) the verdict rests on p alone and
    says so (`one` names it)."""
    # delta 0: sacrebleu's bootstrap gives identical outputs its smallest p, not 1
    if p_value is None or p_value >= alpha or delta == 0:
        return "not significantly different"
    side = "ahead" if delta > 0 else "behind"
    if seed_range is not None:
        whose, low, high, inside = seed_range
        the_one = "one seed" if whose == "the baseline's" else "the baseline's one seed"
        if inside:
            return f"within the seeds' spread ({the_one} inside {whose} seed range {low:.2f}-{high:.2f})"
        return f"{side} ({the_one} outside {whose} seed range {low:.2f}-{high:.2f})"
    if spread is None:
        return f"{side} (p only: one {one}, no spread)"
    return side if abs(delta) > spread else "within the seeds' spread"


def one_seed_range(system: List[float], baseline: List[float]) -> Optional[Tuple[str, float, float, bool]]:
    """Where one side has one seed and the other several: (whose, lowest, highest, inside) of the
    several seeds' BLEU (rounded as shown) and whether the one seed's lies inside; else None."""
    if len(system) == 1 and len(baseline) > 1:
        whose, one, several = "the baseline's", system[0], baseline
    elif len(baseline) == 1 and len(system) > 1:
        whose, one, several = "this system's", baseline[0], system
    else:
        return None
    low, high = round(min(several), 2), round(max(several), 2)
    return whose, low, high, low <= round(one, 2) <= high


def ngram_stats(hyps: List[str], refs: References, tokenize: str, lowercase: bool, max_order: int):
    """Per order 1..max_order: the modified n-gram precision p_n (clipped matches / hypothesis
    n-grams, unsmoothed; with several references clipped by each n-gram's most in any one of
    them) and cumulative BLEU-n, both from sacrebleu's statistics."""
    refs = streams(refs)
    score = BLEU(max_ngram_order=max_order, tokenize=tokenize, lowercase=lowercase, force=True).corpus_score(hyps, refs)
    precision = [100.0 * c / t if t else 0.0 for c, t in zip(score.counts, score.totals)]
    bleu_n = [BLEU(max_ngram_order=n, tokenize=tokenize, lowercase=lowercase, force=True).corpus_score(hyps, refs).score
              for n in range(1, max_order + 1)]
    return precision, bleu_n


def paired(named_hyps: List[Tuple[str, List[str]]], refs: References, metrics: dict, samples: int):
    """sacrebleu's paired bootstrap of every system against the first, with all the references:
    {name: (BLEU, chrF) results}."""
    test = PairedTest(named_hyps, metrics, streams(refs), test_type="bs", n_samples=samples)
    signatures, table = test()
    rows = [table[k] for k in table if k != "System"]  # sacrebleu names chrF "chrF2"
    return signatures, {name: tuple(r[i] for r in rows) for i, (name, _) in enumerate(named_hyps)}


def exact_match(hyps: List[List[str]], refs: References, lowercase: bool) -> float:
    """% of hypotheses equal to one of their references (case-insensitive with lowercase, as the
    scores)."""
    fold = (lambda x: x.lower()) if lowercase else (lambda x: x)  # noqa: E731
    each = [{fold(r) for r in sentence if r is not None} for sentence in zip(*streams(refs))]
    return round(100.0 * sum(fold(h) in rs for seed in hyps for h, rs in zip(seed, each)) / (len(each) * len(hyps)), 1)


def compare(systems: Dict[str, Runs], refs: References, baseline: str, bootstrap_samples: int = 1000,
            tokenize: str = "13a", lowercase: bool = False, max_order: int = MAX_ORDER,
            ref_names: Optional[Sequence[str]] = None) -> dict:
    """Every system against `baseline`: scores per seed, mean and sd, paired bootstrap per seed
    pair and pooled over the pairs, verdict, exact match, n-gram orders, parameters and speed;
    every figure with all the references (`refs`: one, or a list of several; `ref_names`
    what to call them in the report)."""
    refs = streams(refs)
    sentences = len(refs[0])
    if baseline not in systems:
        raise CompareError(f"--baseline {baseline} names no --system (the systems: {', '.join(systems)})")
    if bootstrap_samples < 1:
        raise CompareError(f"{bootstrap_samples} bootstrap samples: a positive number expected")
    metrics = {"BLEU": BLEU(tokenize=tokenize, lowercase=lowercase, force=True), "chrF": CHRF(lowercase=lowercase)}
    base, others = systems[baseline], [n for n in systems if n != baseline]
    pairs = {n: min(len(systems[n].hyps), len(base.hyps)) for n in others}
    # seed pair i: seed i of every system that has one, with the baseline's seed i
    per_seed, signatures = [], {}
    for i in range(max(pairs.values(), default=0)):
        named = [(baseline, base.hyps[i])] + [(n, systems[n].hyps[i]) for n in others if i < pairs[n]]
        signatures, results = paired(named, refs, metrics, bootstrap_samples)
        per_seed.append(results)
    # pooled: the k pairs' sentences as one test set (references repeated)
    pooled = {}
    for n, k in pairs.items():
        named = [(baseline, sum(base.hyps[:k], [])), (n, sum(systems[n].hyps[:k], []))]
        pooled[n] = paired(named, [r * k for r in refs], metrics, bootstrap_samples)[1][n] if k > 1 else per_seed[0][n]

    models = {}
    for n, s in systems.items():
        bleu = [metrics["BLEU"].corpus_score(h, refs).score for h in s.hyps]
        chrf = [metrics["chrF"].corpus_score(h, refs).score for h in s.hyps]
        stats = [ngram_stats(h, refs, tokenize, lowercase, max_order) for h in s.hyps]
        (bleu_mean, bleu_sd), (chrf_mean, chrf_sd) = mean_sd(bleu), mean_sd(chrf)
        models[n] = {
            "label": s.label, "seeds": s.seeds,
            "bleu": [round(x, 2) for x in bleu], "bleu_mean": round(bleu_mean, 2),
            "bleu_sd": None if bleu_sd is None else round(bleu_sd, 2),
            "chrf": [round(x, 2) for x in chrf], "chrf_mean": round(chrf_mean, 2),
            "chrf_sd": None if chrf_sd is None else round(chrf_sd, 2),
            "exact_match": exact_match(s.hyps, refs, lowercase),
            "ngram_precision": [round(sum(p[k] for p, _ in stats) / len(stats), 2) for k in range(max_order)],
            "bleu_n": [round(sum(b[k] for _, b in stats) / len(stats), 2) for k in range(max_order)],
            "params": s.params, "updates_per_second": s.updates_per_second,
            "decode_sentences_per_second": s.decode_sentences_per_second, "valid_curve": s.valid_curve,
            "runs": s.runs, "_bleu": bleu, "_chrf": chrf,
        }
    b = models[baseline]
    for n, m in models.items():
        m["ngram_precision_gain"] = [round(x - y, 2) for x, y in zip(m["ngram_precision"], b["ngram_precision"])]
        m["bleu_n_gain"] = [round(x - y, 2) for x, y in zip(m["bleu_n"], b["bleu_n"])]
        for key, ratio in (("updates_per_second", "train_speed_ratio"), ("decode_sentences_per_second", "decode_speed_ratio")):
            m[ratio] = round(m[key] / b[key], 3) if m[key] and b[key] else None
        if n == baseline:
            m.update(bleu_p_value=None, chrf_p_value=None, seed_p_values=None, verdict=None, delta_bleu=None,
                     delta_chrf=None, seed_pairs=None)
            continue
        k = pairs[n]
        # Δ on the k seed pairs, as the test: the difference of the pairs' (rounded) means
        delta = {key: round(round(mean_sd(m[f"_{key}"][:k])[0], 2) - round(mean_sd(b[f"_{key}"][:k])[0], 2), 2)
                 for key in ("bleu", "chrf")}
        sds = [mean_sd(x["_bleu"][:k])[1] for x in (m, b)]
        spread = None if None in sds else sum(round(sd, 2) for sd in sds)
        bleu_p, chrf_p = pooled[n][0].p_value, pooled[n][1].p_value
        one = "seed" if len(m["bleu"]) == len(b["bleu"]) == 1 else "seed pair"
        m.update(delta_bleu=delta["bleu"], delta_chrf=delta["chrf"], bleu_p_value=bleu_p, chrf_p_value=chrf_p,
                 seed_pairs=k, seed_p_values=[per_seed[i][n][0].p_value for i in range(k)],
                 bleu_ci95=pooled[n][0].ci,
                 verdict=verdict(delta["bleu"], bleu_p, spread, one=one,
                                 seed_range=one_seed_range(m["_bleu"], b["_bleu"])))
    for m in models.values():
        del m["_bleu"], m["_chrf"]
    if not signatures:  # the baseline alone: no test, the metrics' own signatures (after scoring)
        signatures = {name: metric.get_signature() for name, metric in metrics.items()}
    return {"baseline": baseline, "bootstrap_samples": bootstrap_samples, "alpha": ALPHA,
            "test_sentences": sentences, "n_refs": len(refs), "references": list(ref_names) if ref_names else None,
            "sentences_with_fewer_references": sum(any(r is None for r in s) for s in zip(*refs)),
            "max_order": max_order, "tokenize": tokenize, "lowercase": lowercase,
            "signature": {name: str(sig) for name, sig in signatures.items()}, "models": models}


def subset(systems: Dict[str, Runs], refs: References, lines: List[int], description: str, tokenize: str = "13a",
           lowercase: bool = False) -> dict:
    """BLEU (mean and sd over seeds) and exact match of every system on the test sentences at
    `lines` (1-based line numbers of the reference), for a table beside the whole test set's.
    No test against the baseline here: the main table's verdicts are on the whole test set."""
    refs = streams(refs)
    bad = [i for i in lines if not 1 <= i <= len(refs[0])]
    if bad:
        raise CompareError(f"subset {description!r}: line {bad[0]} is not a line of the {len(refs[0])} references")
    picked = sorted(set(lines))
    pick = lambda xs: [xs[i - 1] for i in picked]  # noqa: E731
    bleu = BLEU(tokenize=tokenize, lowercase=lowercase, force=True)
    models = {}
    for n, s in systems.items():
        if not picked:  # nothing to score: no figures, not zeros
            models[n] = {"bleu": [], "bleu_mean": None, "bleu_sd": None, "exact_match": None}
            continue
        scores = [bleu.corpus_score(pick(h), [pick(r) for r in refs]).score for h in s.hyps]
        mean, sd = mean_sd(scores)
        models[n] = {"bleu": [round(x, 2) for x in scores], "bleu_mean": round(mean, 2),
                     "bleu_sd": None if sd is None else round(sd, 2),
                     "exact_match": exact_match([pick(h) for h in s.hyps], [pick(r) for r in refs], lowercase)}
    return {"description": description, "sentences": len(picked), "lines": picked, "models": models}

