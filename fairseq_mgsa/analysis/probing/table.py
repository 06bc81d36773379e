"""mgsa-probe's output: Table 5's layout (markdown and JSON), with the majority baselines,
the partition-only control beside every syntactic row, and the paper's figures."""

import json
import os
from typing import Dict, List, Optional

from .labels import TASK_NAMES

# The paper's Table 5 (accuracy %, Toronto Book Corpus, 120K sentences per task; docs/analyses.md, Probing):
# label, [Voice, Tense, TSS, SPC, POS], the paper's Avg.
PAPER = {
    "pretrained": [("BASE", [73.38, 73.73, 72.72, 92.81, 93.73], 81.27),
                   ("N-Gram Phrase", [73.06, 72.83, 72.11, 96.42, 96.34], 82.15),
                   ("Syntactic Phrase", [73.37, 73.62, 75.60, 96.72, 96.68], 83.19),
                   ("Syntactic Phrase + Interaction", [73.20, 74.78, 75.24, 96.78, 96.56], 83.31)],
    "scratch": [("BASE", [83.46, 85.39, 83.44, 96.35, 96.12], 88.95),
                ("N-Gram Phrase", [83.55, 85.62, 85.21, 96.23, 96.17], 89.36),
                ("Syntactic Phrase", [84.70, 87.52, 97.42, 96.95, 96.24], 92.57),
                ("Syntactic Phrase + Interaction", [86.45, 87.65, 99.07, 96.99, 96.40], 93.31)],
}
PAPER_TASKS = ("voice", "tense", "tss", "spc", "pos")
SETUPS = {"pretrained": "pre-trained NMT encoder (frozen) + MLP", "scratch": "trained from scratch (3 layers) + MLP"}
CONTROLS = {"boundaries": "control: partition only, MLP on the boundaries",
            "encoder": "control: partition only, syntactic encoder on <unk> words"}


def _cells(scores: Dict[str, Optional[float]], tasks: List[str]) -> List[str]:
    values = [scores.get(t) for t in tasks]
    cells = ["-" if v is None else f"{v:.2f}" for v in values]
    known = [v for v in values if v is not None]
    return cells + [f"{sum(known) / len(known):.2f}" if len(known) == len(values) and known else "-"]


def markdown(result: dict) -> str:
    tasks = result["tasks"]
    head = ["#", "model"] + [TASK_NAMES[t] for t in tasks] + ["Avg"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    blank = [""] * (len(tasks) + 1)
    lines.append("| | *majority class* | " + " | ".join(_cells(result["majority"], tasks)) + " |")
    n = 0
    for setup in ("pretrained", "scratch"):
        rows = result["rows"].get(setup, [])
        if not rows:
            continue
        lines.append("| | *" + SETUPS[setup] + "* | " + " | ".join(blank) + " |")
        for row in rows:
            n += 1
            lines.append(f"| {n} | {row['label']} | " + " | ".join(_cells(row["test"], tasks)) + " |")
            for key in ("control", "control_encoder"):
                if row.get("syntactic") and result.get(key):
                    lines.append(f"| | ↳ {result[key]['label']} | " + " | ".join(_cells(result[key]["test"], tasks))
                                 + " |")
    for w in result.get("warnings", []):  # under the table, where its figures are read
        lines += ["", f"**Warning:** {w}"]
    lines += ["", "The paper's Table 5 (other data: Toronto Book Corpus, 120K sentences per task, Stanford parser "
              "trees; not comparable in absolute terms):", ""]
    paper_head = ["#", "model"] + [TASK_NAMES[t] for t in PAPER_TASKS] + ["Avg"]
    lines += ["| " + " | ".join(paper_head) + " |", "|" + "---|" * len(paper_head)]
    n = 0
    for setup in ("pretrained", "scratch"):
        lines.append("| | *paper: " + SETUPS[setup] + "* | " + " | ".join([""] * 6) + " |")
        for label, values, avg in PAPER[setup]:
            n += 1
            lines.append(f"| {n} | {label} | " + " | ".join(f"{v:.2f}" for v in values) + f" | {avg:.2f} |")
    return "\n".join(lines) + "\n"


def data_summary(result: dict) -> str:
    lines = [f"Data: {result['data']['sentences']} sentences of {result['data']['trees']}, split "
             f"{result['data']['split']} (seed {result['data']['seed']}): "
             + ", ".join(f"{k} {v}" for k, v in result['data']['split_sizes'].items()) + "."]
    for t in result["tasks"]:
        info = result["labels"][t]
        counts = ", ".join(f"{c} {n}" for c, n in sorted(info["counts"]["train"].items(), key=lambda x: -x[1])[:8])
        more = len(info["counts"]["train"]) - 8
        lines.append(f"- {TASK_NAMES[t]}: {len(info['classes'])} classes (train: {counts}"
                     + (f", {more} more" if more > 0 else "") + f"); majority '{info['majority_class']}' "
                     f"{result['majority'][t]:.2f}% on test"
                     + (f"; {info['dropped']} sentences without a label left out" if info["dropped"] else ""))
    return "\n".join(lines) + "\n"


def write(result: dict, out: str) -> Dict[str, str]:
    os.makedirs(out, exist_ok=True)
    paths = {"json": os.path.join(out, "probing.json"), "markdown": os.path.join(out, "probing.md")}
    with open(paths["json"], "w") as f:
        json.dump(dict(result, paper=PAPER), f, indent=1)
    with open(paths["markdown"], "w") as f:
        f.write("# Probing (Table 5)\n\n" + markdown(result) + "\n" + data_summary(result))
        rates = [f"{r['name']} {100 * r['unknown_token_rate']:.1f}%" for r in result["rows"].get("pretrained", [])]
        if rates:
            f.write("- <unk> tokens of the probing text in each checkpoint's dictionary: " + ", ".join(rates) + "\n")
    return paths
