"""The README's main command (examples/demo/run_demo.py): its scoring, its README
section, and one tiny run of the whole thing."""

import json
import os
import subprocess
import sys

import pytest
import sacrebleu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "demo"))
import demo_report  # noqa: E402

REFS = [f"da hundo {w} kun da skopo vidis ." for w in ("alto", "rosa", "kilo", "stil", "kluk", "verdo")] * 10


def runs(**hyps):
    return {name: demo_report.Run(name, name.upper(), h, REFS, [(10, 2.0), (20, 1.0)], 0.5) for name, h in hyps.items()}


def test_scores_are_sacrebleus_and_the_bootstrap_compares_against_the_baseline():
    worse = [r.replace("kun", "kunte") if i % 2 else r for i, r in enumerate(REFS)]  # half the sentences wrong
    # as good as the baseline, wrong on other sentences: sentence 0 broken, sentence 1 fixed
    other = [REFS[0].replace("kun", "kunte"), REFS[1]] + worse[2:]
    results = demo_report.score(runs(base=worse, perfect=list(REFS), other=other), "base", 200)
    m = results["models"]
    assert m["base"]["bleu"] == round(sacrebleu.corpus_bleu(worse, [REFS]).score, 2)
    assert m["base"]["chrf"] == round(sacrebleu.corpus_chrf(worse, [REFS]).score, 2)
    assert m["perfect"]["bleu"] == 100.0 and m["perfect"]["exact_match"] == 100.0
    assert m["base"]["exact_match"] == 50.0
    assert m["base"]["bleu_p_value"] is None  # the baseline is not compared with itself
    assert m["perfect"]["bleu_p_value"] < 0.01  # better on every resample
    assert m["other"]["bleu"] == m["base"]["bleu"] and m["other"]["exact_match"] == 50.0
    assert m["other"]["bleu_p_value"] > 0.1  # no evidence of a difference
    assert m["other"]["bleu_n_gap"] == [0.0] * demo_report.MAX_ORDER
    # one wrong word spoils more of the higher-order n-grams: the gap grows with N
    gaps = m["perfect"]["bleu_n_gap"]
    assert gaps[0] > 0 and all(b >= a for a, b in zip(gaps, gaps[1:]))
    assert list(results["signature"]) == ["BLEU", "chrF2"]


def test_verdicts_and_the_spread_over_seeds():
    worse = [r.replace("kun", "kunte") if i % 2 else r for i, r in enumerate(REFS)]
    rs = runs(base=worse, perfect=list(REFS), same=list(worse))
    rs["perfect"].seed_bleu, rs["base"].seed_bleu = {1: 100.0, 2: 90.0, 3: 95.0}, {1: 50.0, 2: 50.0, 3: 50.0}
    for r, speed in zip(rs.values(), (2.0, 1.0, 4.0)):
        r.updates_per_second, r.decode_sentences_per_second, r.params = speed, 2 * speed, 1000
    m = demo_report.score(rs, "base", 100)["models"]
    assert (m["base"]["verdict"], m["perfect"]["verdict"], m["same"]["verdict"]) == \
        (None, "ahead", "not significantly different")
    assert demo_report.verdict(-3.0, 0.01) == "behind" and demo_report.verdict(3.0, 0.2) == "not significantly different"
    assert (m["perfect"]["seed_bleu_mean"], m["perfect"]["seed_bleu_sd"]) == (95.0, 5.0)  # sample sd of 100, 90, 95
    assert m["perfect"]["train_speed_ratio"] == 0.5 and m["same"]["decode_speed_ratio"] == 2.0
    table = demo_report.markdown_table({"baseline": "base", "models": m})
    assert "| 95.00 ± 5.00 (3 seeds) |" in table and "| ahead |" in table


def test_readme_section_is_rewritten_in_place(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\nbefore\n\n{demo_report.README_START}\nold table\n{demo_report.README_END}\nafter\n")
    results = demo_report.score(runs(base=list(REFS), other=list(REFS)), "base", 50)
    results["setup"] = {"train_sentences": 10, "test_sentences": len(REFS), "max_update": 5, "seed": 1, "minutes": 0.1}
    demo_report.update_readme(str(readme), results, "docs/demo")
    once = readme.read_text()
    assert once.startswith("# title\nbefore\n\n") and once.endswith("after\n")
    assert "old table" not in once
    assert "| OTHER | - | 100.00 | +0.00 |" in once
    assert "![BLEU gain by n-gram order](docs/demo/bleu_gain_by_ngram.png)" in once
    demo_report.update_readme(str(readme), results, "docs/demo")
    assert readme.read_text() == once
    readme.write_text("no markers\n")
    with pytest.raises(ValueError, match="no results section"):
        demo_report.update_readme(str(readme), results, "docs/demo")


def test_a_missing_hypothesis_is_an_error_naming_the_file(tmp_path):
    out = tmp_path / "generate.txt"
    out.write_text("S-0\ta\nT-0\tx\nH-0\t-0.1\tx\nS-1\tb\nT-1\ty\n")
    with pytest.raises(ValueError, match=r"generate\.txt: 1 hypotheses and 2 references for 2 test sentences"):
        demo_report.read_generate(str(out), 2)


def test_the_demo_runs_end_to_end_on_a_tiny_budget(tmp_path):
    """Every row, the parser's included (a tiny parser training: the real one, not a stand-in)."""
    work, docs = tmp_path / "work", tmp_path / "docs"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demo", "run_demo.py"),
                           "--workdir", str(work), "--docs-dir", str(docs), "--no-readme", "--train-size", "300",
                           "--test-size", "30", "--max-update", "12", "--validate-every", "6",
                           "--bootstrap-samples", "50", "--tagger-steps", "20", "--parser-epochs", "2",
                           "--systems", "transformer,mgsa_ngram,mgsa_syntactic", "--jobs", "2"],
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    results = json.loads((work / "results.json").read_text())
    rows = ["transformer", "mgsa_ngram", "mgsa_syntactic", "mgsa_syntactic_test_parser", "mgsa_syntactic_parser"]
    assert list(results["models"]) == rows
    for name, m in results["models"].items():
        assert [u for u, _ in m["valid_curve"]] == [6, 12]
        assert 0.0 <= m["bleu"] <= 100.0
    trees = {n: m["trees"] and (m["trees"]["train"], m["trees"]["test"]) for n, m in results["models"].items()}
    assert trees == {"transformer": None, "mgsa_ngram": None, "mgsa_syntactic": ("gold", "gold"),
                     "mgsa_syntactic_test_parser": ("gold", "parser"), "mgsa_syntactic_parser": ("parser", "parser")}
    # one model trained on gold trees serves both of its rows; the parser-tree model is its own
    m = results["models"]
    assert m["mgsa_syntactic_test_parser"]["valid_curve"] == m["mgsa_syntactic"]["valid_curve"]
    assert sorted(os.listdir(work / "checkpoints")) == ["mgsa_ngram", "mgsa_syntactic", "mgsa_syntactic_parser",
                                                        "transformer"]
    assert "train: 3 phrase levels" in (work / "logs" / "train.mgsa_syntactic.log").read_text()
    assert "train: 3 phrase levels" in (work / "logs" / "train.mgsa_syntactic_parser.log").read_text()
    # the parser's F1, recomputed from its test trees with preprocess/bracket_score.py
    from mgsa_preprocess.bracket_score import score_files

    parser = results["parser"]
    f1 = score_files(str(work / "raw" / "test.src.tree"), str(work / "data-bin-parser" / "trees" / "test.src.tree")).f1
    assert parser["test"]["f1"] == round(100 * f1, 2) and parser["test"]["sentences"] == 30
    assert parser["train_trees"] == 300 and parser["megabytes"] > 0
    # the gold-tree model tested on parser trees reads the same tokens, other phrase files
    for name in ("test.src-tgt.src.bin", "test.src-tgt.tgt.bin", "dict.src.txt", "dict.src.tags.txt"):
        assert (work / "data-bin-parser" / name).read_bytes() == (work / "data-bin" / name).read_bytes()
    # parameters from the training logs; speeds relative to the baseline's
    assert m["transformer"]["train_speed_ratio"] == m["transformer"]["decode_speed_ratio"] == 1.0
    assert m["mgsa_syntactic"]["params"] > m["transformer"]["params"] > 0
    assert all(r["decode_speed_ratio"] > 0 and r["train_speed_ratio"] > 0 for r in m.values())
    assert m["transformer"]["verdict"] is None and all(r["verdict"] for n, r in m.items() if n != "transformer")
    table = (work / "results.md").read_text().splitlines()
    assert len(table) == 2 + 5
    for png in ("bleu_gain_by_ngram.png", "valid_loss.png"):
        assert (docs / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        import matplotlib.image
        assert matplotlib.image.imread(str(docs / png)).shape[0] > 100  # a real picture, readable back


@pytest.mark.slow
def test_the_full_demo_puts_syntactic_mgsa_significantly_ahead(tmp_path):
    """The README's main command at its default budget (about 15 minutes on 2 cores)."""
    work = tmp_path / "work"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demo", "run_demo.py"),
                           "--workdir", str(work), "--docs-dir", str(tmp_path / "docs"), "--no-readme"],
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    results = json.loads((work / "results.json").read_text())
    models = results["models"]
    assert "mgsa_syntactic_parser" in models and results["parser"]["test"]["sentences"] == 500
    syntactic, baseline = models["mgsa_syntactic"], models["transformer"]
    assert syntactic["bleu"] > baseline["bleu"] and syntactic["bleu_p_value"] < 0.05
    assert syntactic["chrf"] > baseline["chrf"] and syntactic["chrf_p_value"] < 0.05
