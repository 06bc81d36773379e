"""The demo's stopping rule (issue 29), on two tiny real fairseq-train runs through the demo's own
training (examples/demo/demo_train.py) and the table they end in:

* a run whose validation loss cannot improve (learning rate 0: the weights never change, so
  every validation gives the first one's loss) stops on --patience, well before the cap;
* a run still learning when the cap comes (a few updates) is marked in the table as cut by it;
* under the demo's default rule on the validation BLEU (fairseq's --eval-bleu), a run whose
  translations cannot change stops on --patience, and its best update is the BLEU's.
"""

import os
import re
import subprocess
import sys

import pytest

from mgsa_preprocess.synthetic import write_corpus

from tests.paths import ROOT
sys.path.insert(0, os.path.join(ROOT, "examples", "demo"))
import demo_train  # noqa: E402

TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
        "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
        "--decoder-attention-heads", "2", "--share-all-embeddings"]
RULE = demo_train.Rule(patience=2, validate_every=2, max_update=10)
RULE_BLEU = demo_train.Rule(patience=2, validate_every=2, max_update=10, metric="bleu")
RUNS = {"frozen": ["--lr", "0"],  # the demo's warm-up from 0 to 0: no update changes a weight
        "learning": ["--lr", "3e-3", "--warmup-updates", "1"]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo_stopping")
    write_corpus(str(tmp / "raw"), (("train", 48), ("valid", 8), ("test", 12)), seed=5)
    subprocess.run(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--trainpref",
                    str(tmp / "raw" / "train"), "--validpref", str(tmp / "raw" / "valid"), "--destdir",
                    str(tmp / "bin"), "--joined-dictionary", "--workers", "1"], check=True, capture_output=True)
    out = {name: demo_train.train_one(str(tmp / "bin"), "transformer", 1, str(tmp / name), str(tmp / f"{name}.log"),
                                      RULE, TINY, threads=1, extra=extra) for name, extra in RUNS.items()}
    out["frozen_bleu"] = demo_train.train_one(str(tmp / "bin"), "transformer", 1, str(tmp / "frozen_bleu"),
                                              str(tmp / "frozen_bleu.log"), RULE_BLEU, TINY, threads=1,
                                              extra=RUNS["frozen"])
    return tmp, out


def valid_losses(log):
    """(update, loss) of every validation: the test's own reading of fairseq's lines."""
    return [(int(u), float(x)) for x, u in re.findall(r"valid on 'valid' subset \| loss ([\d.]+) .*?\| num_updates (\d+)",
                                                      open(log).read())]


def test_a_run_whose_validation_cannot_improve_stops_on_patience(trained):
    _, runs = trained
    frozen = runs["frozen"]
    log = open(frozen.log).read()
    assert "'patience': 2" in log and "'max_update': 10" in log  # the rule reached fairseq
    rows = valid_losses(frozen.log)
    assert [u for u, _ in rows] == [2, 4, 6] and len({x for _, x in rows}) == 1
    assert "early stop since valid performance hasn't improved for last 2 runs" in log
    assert frozen.stop["stop"] == "early stop (patience)" and frozen.stop["stopped_at_update"] == 6 < RULE.max_update
    assert frozen.stop["capped"] is False and os.path.isfile(os.path.join(frozen.save, "checkpoint_best.pt"))


def test_the_table_marks_a_run_the_cap_cut_while_improving(trained):
    from fairseq_mgsa.analysis import compare
    from fairseq_mgsa.analysis.compare import report
    tmp, runs = trained
    learning = runs["learning"]
    rows = valid_losses(learning.log)
    assert [u for u, _ in rows] == [2, 4, 6, 8, 10] and rows[-1][1] < min(x for _, x in rows[:-1])
    assert learning.stop["stop"] == "max-update" and learning.stop["capped"] is True
    refs = (tmp / "raw" / "test.tgt").read_text().splitlines()
    hyps = [" ".join(r.split()[1:]) for r in refs]  # not under test here: the references with a word dropped
    table = {name: demo_train.runs_of(name, name, [hyps], [1], [run], [None]) for name, run in runs.items()}
    results = compare.compare(table, refs, "frozen", 10)
    results["stopping"] = RULE.as_dict()
    text = report.terminal_table(results)
    header = next(line for line in text.splitlines() if line.startswith("system"))
    lines = {line.split()[0]: line for line in text.splitlines() if line.split()[:1] in (["frozen"], ["learning"])}
    frozen_loss = valid_losses(runs["frozen"].log)[0][1]
    for column, frozen, cut in (("stopped at", "6", "10"), ("best valid loss", f"{frozen_loss:.3f}", None),
                                ("cut by cap", "no (early stop)", "yes")):
        at = header.index(column)
        assert lines["frozen"][at:].startswith(frozen)
        if cut:
            assert lines["learning"][at:].startswith(cut)
    assert lines["learning"][header.index("best valid loss"):].split()[0] == f"{min(x for _, x in rows):.3f}"
    assert ("Every run validated every 2 updates and stopped when its validation loss had not improved for 2 "
            "validations in a row (fairseq's --patience), or at the cap of 10 updates") in text


def valid_bleus(log):
    """(update, BLEU) of every validation."""
    return [(int(u), float(b)) for b, u in re.findall(r"valid on 'valid' subset \| .*?\| bleu ([\d.]+) .*?\| "
                                                      r"num_updates (\d+)", open(log).read())]


def test_the_bleu_rule_stops_a_run_whose_translations_cannot_change(trained, tmp_path):
    from fairseq_mgsa.analysis.compare import runs as compare_runs
    _, runs = trained
    frozen = runs["frozen_bleu"]
    log = open(frozen.log).read()
    assert "'best_checkpoint_metric': 'bleu'" in log and "'maximize_best_checkpoint_metric': True" in log
    bleus = valid_bleus(frozen.log)
    assert [u for u, _ in bleus] == [2, 4, 6] and len({b for _, b in bleus}) == 1
    assert frozen.stop["stop"] == "early stop (patience)" and frozen.stop["stopped_at_update"] == 6
    assert frozen.stop["best_valid_bleu"] == bleus[0][1] and frozen.stop["capped"] is False
    # the same log with other BLEU figures, as if still running, and a fourth validation at update 8:
    # the best update is the highest BLEU's, however the loss went, and a rise at the last
    # validation is "still improving"
    figures = {2: ("1.5", "1.5"), 4: ("7.25", "7.25"), 6: ("3", "7.25"), 8: ("9", "9")}  # update: (bleu, best_bleu)
    head = log[:log.index("early stop")]
    valid = [line for line in head.splitlines() if "valid on 'valid' subset" in line]
    head += valid[-1].replace("num_updates 6", "num_updates 8") + "\n"

    def refigure(line):
        if "valid on 'valid' subset" not in line:
            return line
        bleu, best = figures[int(re.search(r"num_updates (\d+)", line).group(1))]
        return re.sub(r"\| best_bleu [\d.]+", "| best_bleu " + best, re.sub(r"\| bleu [\d.]+", "| bleu " + bleu, line))
    edited = "\n".join(refigure(line) for line in head.splitlines()) + "\n"
    path = tmp_path / "train.log"
    path.write_text(edited)
    r = compare_runs.read_train_log(str(path))
    assert r.metric == "bleu" and r.best_bleu == 9.0 and r.best_update == 8 and r.improving_at_end is True
    assert r.recent_gain == 9.0 - 7.25  # the best before the last 2 validations (at updates 2 and 4) was 7.25
    assert r.best_loss == min(x for _, x in valid_losses(frozen.log))


def test_the_table_and_its_notes_name_the_bleu_rule(trained):
    from fairseq_mgsa.analysis import compare
    from fairseq_mgsa.analysis.compare import report
    tmp, runs = trained
    refs = (tmp / "raw" / "test.tgt").read_text().splitlines()
    hyps = [" ".join(r.split()[1:]) for r in refs]
    table = {name: demo_train.runs_of(name, name, [hyps], [1], [runs[name]], [None]) for name in ("frozen", "frozen_bleu")}
    results = compare.compare(table, refs, "frozen", 10)
    results["stopping"] = RULE_BLEU.as_dict()
    text = report.terminal_table(results)
    header = next(line for line in text.splitlines() if line.startswith("system"))
    row = next(line for line in text.splitlines() if line.startswith("frozen_bleu"))
    assert row[header.index("best valid BLEU"):].split()[0] == f"{valid_bleus(runs['frozen_bleu'].log)[0][1]:.2f}"
    assert ("stopped when its validation BLEU (greedy decoding, fairseq's --eval-bleu) had not improved for 2 "
            "validations in a row") in text
