"""Every run's validation curves in one figure, and how flat each was where it stopped.

    python examples/tatoeba_zh_en/valid_curves.py --out curves.png [--table curves.md] RUN_DIR_OR_TRAIN_LOG...

Each argument is a run's train.log, or a folder holding one (the run's name is the folder's);
the system is the name without its `_seedN`. Left: validation BLEU (fairseq's greedy one, the
stopping rule's score), right: validation loss, against updates; one colour a system, one line
style a seed; a dot at each run's best validation BLEU. The table (markdown) gives, per run, the
update it stopped at and how (the rule or the cap), its best validation BLEU and where, and two
measures of flatness at the stop: how much the best BLEU rose over the WINDOW updates before the
best (what the last stretch of rising still gained) and the highest BLEU of the validations after
the best (the stretch the rule waited through).
"""

import argparse
import os
import re
import sys

from fairseq_mgsa.analysis.compare import plots  # noqa: F401  (sets matplotlib's file-only backend)
from fairseq_mgsa.analysis.compare.trainlog import read_text, read_train_log, validations
import matplotlib.pyplot as plt

SEED = re.compile(r"^(.*)_seed(\d+)$")
STYLES = ("-", "--", ":", "-.")


def load(arg: str):
    log = os.path.join(arg, "train.log") if os.path.isdir(arg) else arg
    if not os.path.isfile(log):
        sys.exit(f"valid_curves.py: error: {arg}: no train.log there (expected a run's folder or its train.log)")
    name = os.path.basename(os.path.dirname(os.path.abspath(log)))
    m = SEED.match(name)
    system, seed = (m.group(1), int(m.group(2))) if m else (name, 1)
    valid = [v for v in validations(read_text(log)) if "num_updates" in v]
    if not valid:
        sys.exit(f"valid_curves.py: error: {log}: no validation line (fairseq's '| valid on' lines)")
    return dict(name=name, system=system, seed=seed, valid=valid, record=read_train_log(log))


def flatness(run, window: int):
    """(rise of the best BLEU over the `window` updates before the best, highest BLEU after the best)."""
    pts = [(int(v["num_updates"]), v["bleu"]) for v in run["valid"] if "bleu" in v]
    if not pts:
        return None, None
    best_u, best = max(pts, key=lambda p: (p[1], -p[0]))  # fairseq keeps the first of equal bests
    before = [b for u, b in pts if best_u - window <= u < best_u]
    earlier = [b for u, b in pts if u < best_u - window]
    # the best of everything up to WINDOW updates before the best: what the rise over the window is measured from
    base = max(earlier) if earlier else (min(before) if before else None)
    after = [b for u, b in pts if u > best_u]
    return (None if base is None else best - base), (max(after) if after else None)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="runs' folders (each with its train.log) or train.log files")
    p.add_argument("--out", required=True, help="the figure (.png)")
    p.add_argument("--table", help="the flatness table (markdown); default: printed")
    p.add_argument("--window", type=int, default=1500, help="updates before the best for the rise (default 1500)")
    p.add_argument("--title", default="Validation curves, every run")
    a = p.parse_args(argv)
    runs = sorted((load(r) for r in a.runs), key=lambda r: (r["system"], r["seed"]))
    systems = list(dict.fromkeys(r["system"] for r in runs))
    colours = {s: plt.cm.tab10.colors[i % 10] for i, s in enumerate(systems)}
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    for r in runs:
        look = dict(color=colours[r["system"]], linestyle=STYLES[(r["seed"] - 1) % len(STYLES)], linewidth=1.2)
        pts = [(int(v["num_updates"]), v["bleu"]) for v in r["valid"] if "bleu" in v]
        if pts:
            left.plot(*zip(*pts), label=f"{r['system']} seed {r['seed']}", **look)
            u, b = max(pts, key=lambda q: (q[1], -q[0]))
            left.plot([u], [b], marker="o", color=colours[r["system"]])
        losses = [(int(v["num_updates"]), v["loss"]) for v in r["valid"] if "loss" in v]
        right.plot(*zip(*losses), **look)
    left.set_xlabel("updates")
    left.set_ylabel("validation BLEU (greedy, first reference)")
    right.set_xlabel("updates")
    right.set_ylabel("validation loss (label-smoothed, bits)")
    left.legend(fontsize=7, ncol=2)
    fig.suptitle(a.title + " (dot: the run's best validation BLEU, the checkpoint decoded)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    plt.close(fig)
    rows = ["| run | stopped at | how | validations | best valid BLEU @ update | rise over the "
            f"{a.window:,} updates before the best | highest valid BLEU after the best | best valid loss |",
            "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        rec = r["record"]
        rise, after = flatness(r, a.window)
        how = {"patience": "the rule", "cap": "**the cap**"}.get(rec.stopped_by, rec.stopped_by)
        rows.append(f"| {r['name']} | {rec.stop_update} | {how} | {rec.validations} | "
                    f"{rec.best_bleu:.2f} @ {rec.best_update} | "
                    f"{'-' if rise is None else f'{rise:+.2f}'} | {'-' if after is None else f'{after:.2f}'} | "
                    f"{rec.best_loss:.3f} |")
    table = "\n".join(rows) + "\n"
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)
    else:
        print(table, end="")


if __name__ == "__main__":
    main()
