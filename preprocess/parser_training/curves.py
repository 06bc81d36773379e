"""Curves of mgsa-train-parser runs on a real treebank: dev tag accuracy and dev F1 against the minutes
since the command started, read from each run's directory; results JSON and a plot.

    python -m mgsa_preprocess.parser_training.curves --run NAME=DIR[:LOG] ... --out JSON [--plot PNG] [--append]

--out is required: the figures come from model directories that may not last, so the JSON is kept
where the user says (the committed figures of docs/benchmarks-parser.md: --out
docs/results/parser_wsj.json). --append keeps the runs already in that JSON (the model
directories of earlier sessions need not exist any more) and adds or replaces the runs given.

DIR is a directory written by mgsa-train-parser (its mgsa_parser.json, with the test scores of
--test or DIR/test_scores.json from `python -m mgsa_preprocess.parser_training.parser_eval --out`). Runs made before
the record kept the tagger's times give LOG, mgsa-train-parser's output: the tagger's curve is read
from its progress lines there, or, for the old defaults (no such lines), from stanza's timestamped
lines (without --quiet).
"""

import argparse
import json
import os
import re
from datetime import datetime

_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) INFO: (.*)$")


_OURS = re.compile(r"tagger step \d+ .*: dev tag accuracy ([\d.]+) .*\| elapsed (?:(\d+)m)?(\d+)s")


def tagger_curve_from_log(log: str):
    """[(seconds since the tagger started, dev accuracy %)] from the log's tagger lines: this
    command's own progress lines, or else stanza's timestamped ones."""
    t0, curve = None, []
    with open(log) as f:
        for line in f:
            ours = _OURS.search(line)
            if ours:
                curve.append((60 * int(ours.group(2) or 0) + int(ours.group(3)), float(ours.group(1))))
                continue
            m = _STAMP.match(line.strip())
            if not m:
                continue
            t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")
            if m.group(2).startswith("Running tagger"):
                t0 = t
            dev = re.search(r"step (\d+): train_loss = \S+, dev_score = ([\d.]+)", m.group(2))
            if dev and t0 is not None:
                curve.append(((t - t0).total_seconds(), 100 * float(dev.group(2))))
    return curve


def run_figures(name: str, spec: str) -> dict:
    directory, _, log = spec.partition(":")
    with open(os.path.join(directory, "mgsa_parser.json")) as f:
        r = json.load(f)
    test = r.get("test")
    if test is None and os.path.exists(os.path.join(directory, "test_scores.json")):
        with open(os.path.join(directory, "test_scores.json")) as f:
            test = json.load(f)
    tagger_start = r.get("tagger_start_seconds", r.get("wordvec", {}).get("seconds", 0) if isinstance(
        r.get("wordvec"), dict) else 0)
    if "tagger" in r and "dev_seconds" in r["tagger"]:
        tagger = list(zip(r["tagger"]["dev_seconds"], r["tagger"]["dev_accuracy"]))
    else:
        tagger = tagger_curve_from_log(log) if log else []
    tagger_s = r.get("tagger_seconds") or r["tagger"]["seconds"]
    parser_start = r.get("parser_start_seconds", tagger_start + tagger_s)
    t, parser = parser_start + (r.get("parser_setup_seconds") or 0), []
    for e in r["parser_epochs"]:
        t += e["train_seconds"] + e["dev_seconds"]
        parser.append((round(t / 60, 2), e["dev_f1"]))
    return {
        "name": name, "dir": os.path.abspath(directory), "options": r.get("options"),
        "tagger_curve_minutes_accuracy": [(round((tagger_start + s) / 60, 2), round(a, 2)) for s, a in tagger],
        "parser_curve_minutes_dev_f1": parser,
        "minutes": round(r["seconds"] / 60, 1), "tagger_minutes": round(tagger_s / 60, 1),
        "parser_minutes": round(r["parser_seconds"] / 60, 1),
        "load_average": [r.get("load_average_at_start"), r.get("load_average_at_end")],
        "dev": r["dev"], "test": test, "wordvec": r.get("wordvec"),
        "stopped": {"tagger": r.get("tagger", {}).get("stopped"), "parser": r.get("parser_stopped")},
    }


def plot(runs, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for r in runs:
        if r["tagger_curve_minutes_accuracy"]:
            ax1.plot(*zip(*r["tagger_curve_minutes_accuracy"]), marker=".", label=r["name"])
        ax2.plot(*zip(*r["parser_curve_minutes_dev_f1"]), marker=".", label=r["name"])
    ax1.set(xlabel="minutes since the command started", ylabel="dev tag accuracy (%)", title="tagger")
    ax2.set(xlabel="minutes since the command started", ylabel="dev labeled bracket F1", title="parser (per epoch)")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("mgsa-train-parser on the NLTK WSJ sample (3,114 training trees), one thread, shared 2-core machine")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def get_parser():
    p = argparse.ArgumentParser(prog="python -m mgsa_preprocess.parser_training.curves",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--run", action="append", required=True, metavar="NAME=DIR[:LOG]")
    p.add_argument("--out", required=True, help="JSON output (docs/results/parser_wsj.json: the committed one)")
    p.add_argument("--plot", help="PNG of both curves")
    p.add_argument("--append", action="store_true", help="keep the runs of --out that are not given again")
    return p


def main(argv=None):
    p = get_parser()
    a = p.parse_args(argv)
    for spec in a.run:  # every input checked before any is read
        name, _, place = spec.partition("=")
        directory, _, log = place.partition(":")
        if not name or not os.path.isfile(os.path.join(directory, "mgsa_parser.json")):
            p.error(f"--run {spec}: expected NAME=DIR[:LOG], DIR a model directory of mgsa-train-parser "
                    f"(no {os.path.join(directory, 'mgsa_parser.json')})")
        if log and not os.path.isfile(log):
            p.error(f"--run {spec}: {log}: no such log file")
    runs = [run_figures(*spec.split("=", 1)) for spec in a.run]
    if a.append and os.path.exists(a.out):
        with open(a.out) as f:
            given = {r["name"] for r in runs}
            runs = [r for r in json.load(f)["runs"] if r["name"] not in given] + runs
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"treebank": "NLTK WSJ sample, examples/common/split_treebank.py: 3,114 / 400 / 400 trees",
                   "runs": runs}, f, indent=1)
        f.write("\n")
    if a.plot:
        plot(runs, a.plot)
    for r in runs:
        t = r["test"] or {}
        print(f"{r['name']}: {r['minutes']} min, test F1 {t.get('f1')} (evalb {t.get('evalb', {}).get('f1')}), "
              f"tags {t.get('tag_accuracy')}, load {r['load_average']}")


if __name__ == "__main__":
    main()
