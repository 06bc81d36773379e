"""mgsa-compare (fairseq_mgsa/analysis/compare/): verdicts where the right answer is known,
the n-gram orders against a hand count, the outputs, and bad input as one-line errors."""

import json
import random
import subprocess
import sys
from collections import Counter

import pytest
import sacrebleu

from fairseq_mgsa.analysis import compare as cmp
from fairseq_mgsa.analysis.compare import report as compare_report
from mgsa_preprocess.synthetic import write_corpus


@pytest.fixture(scope="module")
def refs(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    write_corpus(str(raw), (("test", 150),), seed=3)
    return (raw / "test.tgt").read_text().split("\n")[:-1]


def corrupt(refs, rate, seed):
    """Each sentence with probability `rate` gets one word replaced: fewer at a lower rate."""
    rng = random.Random(seed)
    out = []
    for r in refs:
        words = r.split()
        if rng.random() < rate:
            words[rng.randrange(len(words))] = "xx"
        out.append(" ".join(words))
    return out


def test_known_verdicts(refs):
    base = [corrupt(refs, 0.6, s) for s in (1, 2, 3)]
    better = [corrupt(refs, 0.2, s) for s in (11, 12, 13)]  # seeded improvements: a third of the errors
    systems = {"base": cmp.Runs("base", "Base", base),
               "copy": cmp.Runs("copy", "Copy", [list(h) for h in base]),
               "better": cmp.Runs("better", "Better", better),
               "one": cmp.Runs("one", "One seed", better[:1])}
    r = cmp.compare(systems, refs, "base", bootstrap_samples=200)
    m = r["models"]
    assert m["base"]["verdict"] is None and m["base"]["bleu_p_value"] is None
    assert m["copy"]["verdict"] == "not significantly different" and m["copy"]["delta_bleu"] == 0.0
    assert m["better"]["verdict"] == "ahead" and m["better"]["bleu_p_value"] < 0.05
    assert len(m["better"]["seed_p_values"]) == 3
    # one seed against the baseline's three: one seed pair (seed 1 with the baseline's seed 1), and
    # the spread is the baseline's seed range, which the one seed lies above
    base_bleu = [round(sacrebleu.corpus_bleu(h, [refs]).score, 2) for h in base]
    assert round(sacrebleu.corpus_bleu(better[0], [refs]).score, 2) > max(base_bleu)
    assert m["one"]["bleu_sd"] is None and m["one"]["verdict"] == (
        f"ahead (one seed outside the baseline's seed range {min(base_bleu):.2f}-{max(base_bleu):.2f})")
    assert m["one"]["seed_pairs"] == 1 and m["better"]["seed_pairs"] == 3
    # mean and sample sd over seeds of sacrebleu's own corpus BLEU
    scores = [sacrebleu.corpus_bleu(h, [refs]).score for h in better]
    mean = sum(scores) / 3
    sd = (sum((s - mean) ** 2 for s in scores) / 2) ** 0.5
    assert m["better"]["bleu_mean"] == round(mean, 2) and m["better"]["bleu_sd"] == round(sd, 2)
    assert m["better"]["chrf"][0] == round(sacrebleu.corpus_chrf(better[0], [refs]).score, 2)
    exact = sum(h == x for hyps in better for h, x in zip(hyps, refs)) / (3 * len(refs))
    assert m["better"]["exact_match"] == round(100 * exact, 1)
    table = compare_report.terminal_table(r)
    assert "ahead" in table and f"{m['better']['bleu_mean']:.2f} ± {m['better']['bleu_sd']:.2f}" in table


def test_verdict_rule():
    assert cmp.verdict(2.0, 0.01, 1.0) == "ahead" and cmp.verdict(-2.0, 0.01, 1.0) == "behind"
    assert cmp.verdict(0.5, 0.01, 1.0) == "within the seeds' spread"  # p small, but inside the seeds' spread
    assert cmp.verdict(2.0, 0.2, 1.0) == "not significantly different"
    assert cmp.verdict(-2.0, 0.01, None) == "behind (p only: one seed, no spread)"


def test_one_seed_inside_the_baselines_seed_range_is_not_told_apart():
    """The rule "p < 0.05 and beyond the seeds' spread" with one seed against three: the spread is
    the three seeds' range. A system at 42.0 against a baseline whose seeds scored 21.8, 67.6 and
    66.3 is not told apart, whatever the one pair's p (it was called ahead on p alone)."""
    inside = cmp.one_seed_range([42.0], [21.8, 67.6, 66.3])
    assert inside == ("the baseline's", 21.8, 67.6, True)
    assert cmp.verdict(20.2, 0.001, None, one="seed pair", seed_range=inside) == (
        "within the seeds' spread (one seed inside the baseline's seed range 21.80-67.60)")
    above = cmp.one_seed_range([70.0], [21.8, 67.6, 66.3])
    assert cmp.verdict(48.2, 0.001, None, seed_range=above) == (
        "ahead (one seed outside the baseline's seed range 21.80-67.60)")
    assert cmp.verdict(48.2, 0.2, None, seed_range=above) == "not significantly different"
    # the other way: the baseline's one seed inside the system's three
    other = cmp.one_seed_range([30.0, 40.0, 35.0], [33.0])
    assert cmp.verdict(2.0, 0.01, None, seed_range=other) == (
        "within the seeds' spread (the baseline's one seed inside this system's seed range 30.00-40.00)")
    assert cmp.one_seed_range([30.0], [33.0]) is None  # one seed each: p alone, said so


def hand_precisions(hyps, refs, max_order):
    """Modified n-gram precision by hand: clipped matches / hypothesis n-grams, per order."""
    matches, totals = [0] * max_order, [0] * max_order
    for h, r in zip(hyps, refs):
        hw, rw = h.split(), r.split()
        for n in range(1, max_order + 1):
            hc = Counter(tuple(hw[i:i + n]) for i in range(len(hw) - n + 1))
            rc = Counter(tuple(rw[i:i + n]) for i in range(len(rw) - n + 1))
            matches[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            totals[n - 1] += sum(hc.values())
    return [100.0 * m / t if t else 0.0 for m, t in zip(matches, totals)]


def test_ngram_orders_against_a_hand_count():
    refs = ["the cat sat on the mat", "a dog ran in the park today"]
    base = ["the cat sat on a mat", "a dog ran the park today"]
    system = ["the cat sat on the mat", "a dog ran in a park today"]
    # by hand: base 1-grams 5/6 + 6/6 = 11/12; system 6/6 + 6/7 = 12/13; 2-grams base 3/5 + 4/5, system 5/5 + 4/6
    assert hand_precisions(base, refs, 2) == pytest.approx([100 * 11 / 12, 100 * 7 / 10])
    assert hand_precisions(system, refs, 2) == pytest.approx([100 * 12 / 13, 100 * 9 / 11])
    r = cmp.compare({"b": cmp.Runs("b", "B", [base]), "s": cmp.Runs("s", "S", [system])}, refs, "b",
                    bootstrap_samples=10, tokenize="none", max_order=4)
    gain = [x - y for x, y in zip(hand_precisions(system, refs, 4), hand_precisions(base, refs, 4))]
    assert r["models"]["s"]["ngram_precision_gain"] == pytest.approx(gain, abs=0.011)  # gain of two rounded precisions
    assert r["models"]["s"]["bleu_n"][0] == pytest.approx(
        sacrebleu.metrics.BLEU(max_ngram_order=1, tokenize="none").corpus_score(system, [refs]).score, abs=0.006)
    rows = compare_report.ngram_rows(r)
    assert rows[0][:3] == ["system", "Δ p1", "Δ p2"] and rows[1][1] == f"{gain[0]:+.2f}"


def mgsa_compare(*args, cwd):
    return subprocess.run([sys.executable, "-m", "fairseq_mgsa.analysis.compare", *args], cwd=cwd,
                          capture_output=True, text=True)


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_command_writes_its_outputs_from_files_and_run_directories(refs, tmp_path):
    ref = write(tmp_path / "ref.txt", refs)
    base = write(tmp_path / "base.txt", corrupt(refs, 0.6, 1))
    run = tmp_path / "results" / "mgsa_ngram"  # a recipe's run directory, its training log under checkpoints/
    run.mkdir(parents=True)
    write(run / "hyp.detok", corrupt(refs, 0.2, 2))
    (run / "generate-test.txt").write_text("Translated 150 sentences (4,000 tokens) in 2.0s (75.00 sentences/s, x)\n")
    (tmp_path / "checkpoints" / "mgsa_ngram").mkdir(parents=True)
    (tmp_path / "checkpoints" / "mgsa_ngram" / "train.log").write_text(
        "num. shared model params: 1,234,567 (num. trained: 1,234,567)\n"
        "epoch 001 | loss 3 | num_updates 50 | wall 10\nepoch 002 | loss 2 | num_updates 100 | wall 25\n")
    proc = mgsa_compare("--ref", ref, "--system", f"transformer={base}", "--system", f"mgsa_ngram={run}",
                        "--out", "out", "--bootstrap-samples", "100", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    m = results["models"]["mgsa_ngram"]
    assert m["label"] == "MG-SA n-gram" and m["params"] == 1234567 and m["decode_sentences_per_second"] == 75.0
    assert m["updates_per_second"] == 4.0 and m["verdict"] == "ahead (p only: one seed, no spread)"
    assert "| MG-SA n-gram | 1 |" in (out / "results.md").read_text()
    assert "MG-SA n-gram" in proc.stdout and f"written to {out}" in proc.stdout
    assert (out / "bleu_by_ngram_order.png").stat().st_size > 0
    assert "Word Accuracies" in (out / "compare-mt" / "index.html").read_text()
    assert "DEBUG" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("case", ["short", "missing"])
def test_bad_input_is_one_line_naming_the_file(refs, tmp_path, case, capsys, monkeypatch):
    ref = write(tmp_path / "ref.txt", refs)
    base = write(tmp_path / "base.txt", refs)
    bad = write(tmp_path / "short.txt", refs[:-1]) if case == "short" else str(tmp_path / "missing.txt")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit:  # in-process: the command line is tested above
        cmp.main(["--ref", ref, "--system", f"a={base}", "--system", f"b={base},{bad}", "--out", "out"])
    assert exit.value.code == 2 and not (tmp_path / "out").exists()
    lines = capsys.readouterr().err.splitlines()
    if case == "short":
        assert lines == [f"mgsa-compare: error: {bad}: {len(refs) - 1} lines, but the reference {ref} has "
                         f"{len(refs)} (ends at line {len(refs) - 1}; one hypothesis a line, in the reference's "
                         f"order, expected)"]
    else:
        assert lines == [f"mgsa-compare: error: {bad}: no such file (hypotheses expected)"]
