"""The demo (examples/demo/run_demo.py, `make demo`): its docs section, and one tiny run of the whole
thing (its scoring is mgsa-compare's, tested in tests/test_compare.py)."""

import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT
sys.path.insert(0, os.path.join(ROOT, "examples", "demo"))
import demo_report  # noqa: E402

# whole pipelines or every system's commands, a minute or more: `make test-long` (CI runs it)
pytestmark = pytest.mark.long

REFS = [f"da hundo {w} kun da skopo vidis ." for w in ("alto", "rosa", "kilo", "stil", "kluk", "verdo")] * 10


def results_of(**hyps):
    from fairseq_mgsa.analysis import compare
    runs = {name: compare.Runs(name, name.upper(), [h]) for name, h in hyps.items()}
    results = compare.compare(runs, REFS, "base", 50)
    results["setup"] = {"train_sentences": 10, "test_sentences": len(REFS), "max_update": 5, "seeds": [1],
                        "minutes": 0.1, "jobs": 2, "threads": 1,
                        "load_average": {"start": [0.5, 0.4, 0.3], "end": [2.1, 1.9, 1.2]},
                        "command": "python examples/demo/run_demo.py"}
    results["stopping"] = {"patience": 3, "validate_every": 2, "max_update": 5}
    ambiguous = [i for i in range(1, len(REFS) + 1) if i % 4 == 0]
    results["subsets"] = {"ambiguous": compare.subset(runs, REFS, ambiguous, "every fourth line")}
    return results


def test_docs_section_is_rewritten_in_place(tmp_path):
    docs = tmp_path / "demo.md"
    docs.write_text(f"# title\nbefore\n\n{demo_report.DOCS_START}\nold table\n{demo_report.DOCS_END}\nafter\n")
    results = results_of(base=list(REFS), other=list(REFS))
    demo_report.update_docs(str(docs), results, "demo")
    once = docs.read_text()
    assert once.startswith("# title\nbefore\n\n") and once.endswith("after\n")
    assert "old table" not in once
    assert "| OTHER | 1 | 100.00 | +0.00 |" in once
    # the rule, and the ambiguous subset's table and count (filled by the report code)
    assert "stopped after 3 validations without a new best validation loss, or at the cap of 5 updates" in once
    assert "| BLEU (ambiguous, 15) | exact match % (ambiguous) |" in once
    assert "| OTHER | 100.00 | 100.0 | 100.00 | 100.0 |" in once
    assert "15 of the 60 test sentences (25.0%) are ambiguous: every fourth line." in once
    assert "![BLEU by n-gram order](demo/bleu_by_ngram_order.png)" in once
    # what the minutes were measured under
    assert ("2 models trained at once with 1 thread each, the machine's load average (1, 5, 15 min) 0.5 0.4 0.3 "
            "at the start and 2.1 1.9 1.2 at the end") in once
    demo_report.update_docs(str(docs), results, "demo")
    assert docs.read_text() == once
    docs.write_text("no markers\n")
    with pytest.raises(ValueError, match="no results section"):
        demo_report.update_docs(str(docs), results, "demo")


def test_a_missing_hypothesis_is_an_error_naming_the_file(tmp_path):
    out = tmp_path / "generate.txt"
    out.write_text("S-0\ta\nT-0\tx\nH-0\t-0.1\tx\nS-1\tb\nT-1\ty\n")
    with pytest.raises(ValueError, match=r"generate\.txt: 1 hypotheses and 2 references for 2 test sentences"):
        demo_report.read_generate(str(out), 2)


def test_the_demo_runs_end_to_end_on_a_tiny_budget(tmp_path):
    """Every row, the parser's and the parameter-matched baseline's included (a tiny parser
    training: the real one, not a stand-in); everything under demo-out/ of the current directory."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "demo.md").write_text(f"text\n{demo_report.DOCS_START}\n{demo_report.DOCS_END}\n")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demo", "run_demo.py"),
                           "--update-docs", "--docs-dir", str(docs), "--train-size", "300",
                           "--test-size", "30", "--max-update", "12", "--validate-every", "6", "--patience", "2",
                           "--seeds", "1",
                           "--bootstrap-samples", "50", "--tagger-steps", "20", "--parser-epochs", "2",
                           "--systems", "transformer,transformer_matched,mgsa_syntactic", "--parser-rows",
                           "--jobs", "2"],
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    work = tmp_path / "demo-out"
    assert "DEBUG" not in proc.stdout and f"Everything is in {work}" in proc.stdout
    assert "against the baseline" in proc.stdout  # the table, on the terminal
    results = json.loads((work / "results.json").read_text())
    rows = ["transformer", "transformer_matched", "mgsa_syntactic", "mgsa_syntactic_test_parser",
            "mgsa_syntactic_parser"]
    assert list(results["models"]) == rows
    m = results["models"]
    for name, r in m.items():
        assert [u for u, _ in r["valid_curve"]] == [6, 12]
        assert 0.0 <= r["bleu"][0] <= 100.0
    assert m["mgsa_syntactic_parser"]["label"].endswith(", parser trees")
    # the stopping rule (the default's: on the validation BLEU): two validations, so patience 2
    # cannot stop a run before the cap at 12
    assert results["stopping"] == {"patience": 2, "validate_every": 6, "max_update": 12, "metric": "bleu"}
    train_log = (work / "logs" / "train.transformer.log").read_text()
    assert "'patience': 2" in train_log and "'best_checkpoint_metric': 'bleu'" in train_log
    for r in m.values():
        [run] = r["runs"]
        assert run["stop"] == "max-update" and run["stopped_at_update"] == 12 and run["best_valid_loss"] > 0
        assert 0.0 <= run["best_valid_bleu"] <= 100.0
    assert "cut by cap" in proc.stdout and "at the cap of 12 updates" in proc.stdout
    # where the time went, step by step, and the command with the options that shape the results
    setup = results["setup"]
    assert list(setup["step_minutes"]) == ["corpus and preprocessing", "parser (training, parsing, preprocessing)",
                                           "training", "decoding", "scoring"]
    assert sum(setup["step_minutes"].values()) <= setup["minutes"] + 0.3  # each rounded to 0.1
    assert "--seeds 1" in setup["command"] and "--docs-dir" not in setup["command"]
    assert f"minutes in all (corpus and preprocessing {setup['step_minutes']['corpus and preprocessing']}" in \
        (docs / "demo.md").read_text()
    # the attachment-ambiguous test sentences: listed, scored apart, counted in the notes
    from mgsa_preprocess.synthetic import attachment_ambiguous
    trees = (work / "raw" / "test.src.tree").read_text().splitlines()
    ambiguous = [i for i, t in enumerate(trees, 1) if attachment_ambiguous(t)]
    assert ambiguous and (work / "raw" / "test.ambiguous").read_text().split() == [str(i) for i in ambiguous]
    sub = results["subsets"]["ambiguous"]
    assert sub["lines"] == ambiguous and set(sub["models"]) == set(rows)
    assert results["subsets"]["unambiguous"]["sentences"] == 30 - len(ambiguous)
    assert f"{len(ambiguous)} of the 30 test sentences" in (docs / "demo.md").read_text()
    # one model trained on gold trees serves both of its rows; the parser-tree model is its own
    assert m["mgsa_syntactic_test_parser"]["valid_curve"] == m["mgsa_syntactic"]["valid_curve"]
    assert sorted(os.listdir(work / "checkpoints")) == ["mgsa_syntactic", "mgsa_syntactic_parser", "transformer",
                                                        "transformer_matched"]
    assert "train: 3 phrase levels" in (work / "logs" / "train.mgsa_syntactic_parser.log").read_text()
    # the parameter-matched baseline: within 5% of PBA interleaved QUERYK's parameters at these dimensions
    from fairseq_mgsa.analysis.compare.matched import count_params
    sys.path.insert(0, os.path.join(ROOT, "examples", "demo"))
    import run_demo
    from fairseq_mgsa import systems
    peer = count_params(["--arch", systems.get("pba_interleaved_queryk").arch("base"), *run_demo.SMALL],
                        vocab=len((work / "data-bin" / "dict.src.txt").read_text().splitlines()))[0]
    assert abs(m["transformer_matched"]["params"] - peer) <= 0.05 * peer
    assert m["transformer_matched"]["params"] > 1.5 * m["transformer"]["params"]
    # the parser's F1, recomputed from its test trees with preprocess/parser_training/bracket_score.py
    from mgsa_preprocess.parser_training.bracket_score import score_files

    f1 = score_files(str(work / "raw" / "test.src.tree"), str(work / "data-bin-parser" / "trees" / "test.src.tree")).f1
    assert results["parser"]["test"]["f1"] == round(100 * f1, 2) and results["parser"]["test"]["sentences"] == 30
    assert m["transformer"]["train_speed_ratio"] == m["transformer"]["decode_speed_ratio"] == 1.0
    assert all(r["decode_speed_ratio"] > 0 and r["train_speed_ratio"] > 0 for r in m.values())
    assert m["transformer"]["verdict"] is None and all(r["verdict"] for n, r in m.items() if n != "transformer")
    # --update-docs: docs/demo.md's section and docs/demo/*.png
    assert "| Transformer, parameter-matched to PBA interleaved QUERYK | 1 |" in (docs / "demo.md").read_text()
    for png in ("bleu_by_ngram_order.png", "valid_loss.png"):
        assert (docs / "demo" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        import matplotlib.image
        assert matplotlib.image.imread(str(docs / "demo" / png)).shape[0] > 100  # a real picture, readable back
    assert (work / "compare-mt" / "index.html").exists()


@pytest.mark.slow
def test_the_full_demo_puts_syntactic_mgsa_significantly_ahead(tmp_path):
    """The README's main command at its defaults (the Transformer and syntactic MG-SA on gold trees,
    three seeds, each run stopped by the rule before the cap)."""
    work = tmp_path / "demo-out"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demo", "run_demo.py")],
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    results = json.loads((work / "results.json").read_text())
    models = results["models"]
    assert list(models) == ["transformer", "mgsa_syntactic"] and "parser" not in results
    assert all(r["stop"] == "early stop (patience)" for m in models.values() for r in m["runs"])
    syntactic, baseline = models["mgsa_syntactic"], models["transformer"]
    assert syntactic["bleu_mean"] > baseline["bleu_mean"] and syntactic["bleu_p_value"] < 0.05
    assert syntactic["chrf_mean"] > baseline["chrf_mean"] and syntactic["chrf_p_value"] < 0.05


@pytest.mark.parametrize("args, error", [
    (["--patience", "0"], "--patience must be at least 1 (got 0)"),
    (["--validate-every", "-5"], "--validate-every must be at least 1 (got -5)"),
    (["--max-update", "0"], "--max-update must be at least 1 (got 0)"),
    (["--threads", "0"], "--threads must be at least 1 (got 0)"),
    (["--seeds", "1,x"], "--seeds '1,x': comma-separated integers expected"),
    (["--seeds", "2,2"], "--seeds '2,2': at least one seed, each once"),
])
def test_bad_options_are_one_line_errors(args, error, capsys):
    import run_demo
    with pytest.raises(SystemExit) as e:
        run_demo.main(args)
    assert e.value.code == 2 and capsys.readouterr().err.splitlines()[-1].endswith(f"error: {error}")


def test_the_defaults_are_the_issues(capsys):
    """Three seeds, and --full: every system of the registry, the cap raised (its help says so)."""
    import run_demo
    assert run_demo.SEEDS == "1,2,3" and run_demo.FULL_MAX_UPDATE > run_demo.MAX_UPDATE
    with pytest.raises(SystemExit):
        run_demo.main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "every system of the registry and the parser's rows, to convergence" in help_text
    assert f"raised to {run_demo.FULL_MAX_UPDATE} updates" in help_text
