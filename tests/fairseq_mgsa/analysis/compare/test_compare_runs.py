"""mgsa-compare on run directories (issues 29, 30): where each run stopped, its best validation
loss, its training minutes, and whether its cap (--max-update) cut it while it was still
improving, read from the train.log of two tiny real fairseq-train runs: one stopped by
--patience on a plateau (lr 0: the validation loss cannot change), one cut by --max-update."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.paths import ROOT

from fairseq_mgsa.analysis import compare as cmp
from mgsa_preprocess.synthetic import write_corpus

TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
        "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
        "--decoder-attention-heads", "2"]
RUNS = {  # name: (lr, max updates, patience, options): validation every 2 updates
    "plateau": ("0", "30", "1", ["--no-save"]),  # no checkpoints: fairseq logs no best_loss, the loss decides
    # checkpoints at every validation: its valid lines carry fairseq's best_loss, which decides
    "capped": ("3e-3", "6", "5", ["--save-interval-updates", "2", "--no-epoch-checkpoints"]),
}


def run(cmd, log=None):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    if log:
        with open(log, "w") as f:  # as the recipes keep it: fairseq-train's output | tee train.log
            f.write(proc.stdout)
    return proc.stdout


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """WORKDIR as the recipes lay it out: results/RUN/hyp.detok, checkpoints/RUN/train.log."""
    tmp = tmp_path_factory.mktemp("runs")
    write_corpus(str(tmp / "raw"), (("train", 48), ("valid", 8), ("test", 20)), seed=5)
    run(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--trainpref", str(tmp / "raw" / "train"),
         "--validpref", str(tmp / "raw" / "valid"), "--destdir", str(tmp / "bin"), "--joined-dictionary",
         "--workers", "1"])
    refs = (tmp / "raw" / "test.tgt").read_text().split("\n")[:-1]
    for name, (lr, max_update, patience, options) in RUNS.items():
        ckpt, results = tmp / "checkpoints" / name, tmp / "results" / name
        results.mkdir(parents=True)
        ckpt.mkdir(parents=True)
        run(["fairseq-train", str(tmp / "bin"), "--task", "translation", "--arch", "transformer", *TINY,
             "--optimizer", "adam", "--lr", lr, "--max-tokens", "200", "--max-update", max_update,
             "--validate-interval-updates", "2", "--patience", patience, "--save-dir", str(ckpt), *options,
             "--cpu", "--log-format", "simple", "--log-interval", "1", "--no-progress-bar", "--num-workers", "0",
             "--seed", "1"], log=ckpt / "train.log")
        # the hypotheses are not under test here: the references with a word dropped
        (results / "hyp.detok").write_text("".join(" ".join(r.split()[1:]) + "\n" for r in refs))
    return tmp


def valid_losses(log):
    """(num_updates, loss) of every validation: the reference the parser is checked against."""
    return [(int(u), float(x)) for x, u in
            re.findall(r"valid on 'valid' subset \| loss ([\d.]+) .*?\| num_updates (\d+)", log)]


def test_the_table_marks_the_run_its_cap_cut(work):
    out = work / "compare"
    proc = subprocess.run([sys.executable, "-m", "fairseq_mgsa.analysis.compare", "--ref",
                           str(work / "raw" / "test.tgt"), "--system", f"plateau={work / 'results' / 'plateau'}",
                           "--system", f"capped={work / 'results' / 'capped'}", "--out", str(out),
                           "--no-compare-mt", "--bootstrap-samples", "10"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    models = json.loads((out / "results.json").read_text())["models"]
    for name in RUNS:
        log = (work / "checkpoints" / name / "train.log").read_text()
        [r] = models[name]["runs"]
        losses = valid_losses(log)
        assert r["best_valid_loss"] == min(x for _, x in losses)
        assert r["stopped_at_update"] == losses[-1][0] == int(re.findall(r"num_updates (\d+)", log)[-1])
        seconds = float(re.search(r"done training in ([\d.]+) seconds", log).group(1))
        assert r["train_minutes"] == round(seconds / 60, 2)
        assert r["best_valid_bleu"] is None  # no --eval-bleu
    plateau, capped = models["plateau"]["runs"][0], models["capped"]["runs"][0]
    assert plateau["stop"] == "early stop (patience)" and plateau["capped"] is False
    assert plateau["stopped_at_update"] == 4  # validations at 2 and 4, equal: patience 1 is out
    assert capped["stop"] == "max-update" and capped["improving_at_end"] is True and capped["capped"] is True
    assert capped["stopped_at_update"] == 6
    valid_lines = [line for line in (work / "checkpoints" / "capped" / "train.log").read_text().splitlines()
                   if "valid on 'valid' subset" in line]
    assert all("| best_loss " in line for line in valid_lines[-2:])  # fairseq's own figure decided
    table = proc.stdout
    header = next(line for line in table.splitlines() if line.startswith("system"))
    assert "stopped at" in header and "cut by cap" in header and "best valid loss" in header
    cut = header.index("cut by cap")
    rows = {line.split()[0]: line for line in table.splitlines() if line.split()[:1] in (["plateau"], ["capped"])}
    assert rows["capped"][cut:].split()[0] == "yes" and rows["plateau"][cut:].split()[0] == "no"
    assert "Cut by cap: yes where fairseq-train stopped at its cap" in table  # the notes say what it means


def test_an_unfinished_log_and_a_plateau_under_the_cap(work, tmp_path):
    """A log that ends without fairseq's "done training" (killed): unfinished, minutes from its
    lines' clock; a run the cap stopped after its best validation: not marked."""
    from fairseq_mgsa.analysis.compare import runs
    log = (work / "checkpoints" / "capped" / "train.log").read_text()
    cut = log[:log.index("Stopping training")]
    cut = cut[:cut.rindex("\n") + 1]
    path = tmp_path / "train.log"
    path.write_text(cut)
    r = runs.read_stop(str(path))
    stamps = re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \|", cut, flags=re.M)
    from datetime import datetime
    span = (datetime.fromisoformat(stamps[-1]) - datetime.fromisoformat(stamps[0])).total_seconds()
    assert r["stop"] == "unfinished" and r["capped"] is False and r["train_minutes"] == round(span / 60, 2)
    # the plateau's log with its early-stop line removed: the cap stopped it, after no improvement
    plateau = (work / "checkpoints" / "plateau" / "train.log").read_text()
    path.write_text(plateau.replace("early stop since valid performance", "(removed)"))
    r = runs.read_stop(str(path))
    assert r["stop"] == "max-epoch" and r["improving_at_end"] is False and r["capped"] is False


def test_the_recipes_stopping_record_reads_the_same_facts(work):
    """The stopping rule's `summary` prints trainlog.py's reading, as mgsa-compare does."""
    from fairseq_mgsa.analysis.compare import runs
    logs = [str(work / "checkpoints" / name / "train.log") for name in RUNS]
    rule = [sys.executable, "-m", "fairseq_mgsa.analysis.compare.stopping", "summary", *logs]
    out = subprocess.run(rule + ["--json"], capture_output=True, text=True, cwd=ROOT)
    # nothing on stderr but fairseq's own line at import (tensorboardX missing)
    assert out.returncode == 0 and [l for l in out.stderr.splitlines() if "tensorboardX" not in l] == [], out.stderr
    plateau, capped = [json.loads(line) for line in out.stdout.splitlines()]
    for summary, log in zip((plateau, capped), logs):
        stop = runs.read_stop(log)
        assert summary["log"] == log and summary["stop_update"] == stop["stopped_at_update"]
        assert summary["best_loss"] == stop["best_valid_loss"] and summary["train_minutes"] == stop["train_minutes"]
        assert summary["validations"] == len(valid_losses((work / "checkpoints" / os.path.basename(
            os.path.dirname(log)) / "train.log").read_text()))
    assert plateau["stopped_by"] == "patience" and plateau["best_update"] == 2 and plateau["patience"] == 1
    assert capped["stopped_by"] == "cap" and capped["improving_at_end"] and capped["best_update"] == 6
    lines = subprocess.run(rule, capture_output=True, text=True, cwd=ROOT).stdout
    assert "stopped on validation" in lines.splitlines()[0]
    assert "cut by the cap while still improving" in lines.splitlines()[1]
