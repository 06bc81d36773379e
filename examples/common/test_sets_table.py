"""One table over several test sets, as the papers lay out NIST's MT03-MT06: a row per system,
a BLEU column per test set (mean over seeds, ± sd with several), their unweighted average, and
beside each figure the verdict against the baseline that mgsa-compare gave on that test set
(a mark: + ahead, - behind, nothing otherwise; every verdict in full under the table).

    python examples/common/test_sets_table.py --out results/compare/test_sets.md mt03=DIR mt04=DIR ...

Each DIR is mgsa-compare's output for one test set (its results.json). The systems, their
order and the baseline come from the first; every other must have the same systems. The table
is written to --out (markdown) and printed.
"""

import argparse
import json
import os
import sys


def load(spec):
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        sys.exit(f"test_sets_table.py: error: {spec!r}: NAME=DIR expected (DIR: mgsa-compare's --out)")
    results = os.path.join(path, "results.json")
    try:
        with open(results, encoding="utf-8") as f:
            return name, json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"test_sets_table.py: error: {results}: cannot read mgsa-compare's results ({e})")


def mark(model):
    """+ / - where mgsa-compare's verdict says ahead / behind (beyond p and the seeds' spread)."""
    verdict = model.get("verdict") or ""
    if verdict.startswith("ahead"):
        return " +"
    if verdict.startswith("behind"):
        return " -"
    return ""


def cell(model):
    if model.get("bleu_sd") is None:
        return f"{model['bleu_mean']:.2f}{mark(model)}"
    return f"{model['bleu_mean']:.2f} ± {model['bleu_sd']:.2f}{mark(model)}"


def table(sets):
    first_name, first = sets[0]
    systems = list(first["models"])
    for name, results in sets[1:]:
        if list(results["models"]) != systems:
            sys.exit(f"test_sets_table.py: error: {name}: systems {', '.join(results['models'])}, but {first_name} "
                     f"has {', '.join(systems)} (one comparison of the same systems on every test set expected)")
    refs = sorted({r.get("n_refs", 1) for _, r in sets})
    head = ["system"] + [f"{name} ({r['test_sentences']})" for name, r in sets] + ["average"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for system in systems:
        models = [r["models"][system] for _, r in sets]
        average = sum(m["bleu_mean"] for m in models) / len(models)
        label = models[0].get("label") or system
        lines.append("| " + " | ".join([label] + [cell(m) for m in models] + [f"{average:.2f}"]) + " |")
    notes = [
        "",
        f"BLEU (sacrebleu, {'case-insensitive' if first.get('lowercase') else 'case-sensitive'}, "
        f"{'/'.join(map(str, refs))} reference{'s' if refs != [1] else ''} a sentence), mean over seeds "
        f"(± sd with several); average: the unweighted mean of the test sets' figures. "
        f"+ / -: ahead of / behind the baseline ({first['baseline']}) on that test set by mgsa-compare's "
        f"verdict (paired bootstrap p < {first.get('alpha', 0.05)} and beyond the seeds' spread).",
        "",
    ]
    for system in systems:
        if system == first["baseline"]:
            continue
        verdicts = "; ".join(f"{name}: {r['models'][system].get('verdict')}" for name, r in sets)
        notes.append(f"- {system}: {verdicts}")
    return "\n".join(lines + notes) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the markdown file to write")
    p.add_argument("sets", nargs="+", metavar="NAME=DIR", help="a test set's name and mgsa-compare's output for it")
    a = p.parse_args(argv)
    text = table([load(spec) for spec in a.sets])
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"== BLEU on every test set ({a.out})\n{text}", end="")


if __name__ == "__main__":
    main()
