"""Every run's validation curves in one figure, and how flat each was, by its stopping score, where it stopped.

    python examples/common/valid_curves.py --out curves.png [--table curves.md] RUN_DIR_OR_TRAIN_LOG...

Each argument is a run's train.log, or a folder holding one (the run's name is the folder's);
the system is the name without its `_seedN`. The figure plots validation loss against updates and,
when any run validated with BLEU (fairseq's `--eval-bleu`), validation BLEU in a second panel; one
colour a system, one line style a seed; a dot at each run's best validation by its own
`--best-checkpoint-metric` (the checkpoint decoded). The table (markdown) gives, per run, the update
it stopped at and how (the rule or the cap), its stopping score and best, and two measures of
flatness at the stop, in that score: how much the best improved over the WINDOW updates before the
best (what the last stretch still gained: BLEU rose, loss fell) and the best of the validations
after the best (the stretch the rule waited through).
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


def points(run, metric: str):
    return [(int(v["num_updates"]), v[metric]) for v in run["valid"] if metric in v]


def best_point(pts, metric: str):
    """fairseq's best: the highest BLEU or lowest loss, the first of equal ones."""
    sign = -1 if metric == "bleu" else 1
    return min(pts, key=lambda p: (sign * p[1], p[0]))


def flatness(run, window: int):
    """By the run's stopping score: (how much the best improved over the `window` updates before it,
    the best score of the validations after it); None where there is nothing to measure."""
    metric = run["record"].metric
    pts = points(run, metric)
    if not pts:
        return None, None
    better, worse = (max, min) if metric == "bleu" else (min, max)
    best_u, best = best_point(pts, metric)
    before = [s for u, s in pts if best_u - window <= u < best_u]
    earlier = [s for u, s in pts if u < best_u - window]
    # the best of everything up to WINDOW updates before the best: what the gain is measured from
    base = better(earlier) if earlier else (worse(before) if before else None)
    after = [s for u, s in pts if u > best_u]
    gain = None if base is None else (best - base if metric == "bleu" else base - best)
    return gain, (better(after) if after else None)


def figure(runs, out: str, title: str) -> None:
    with_bleu = any(points(r, "bleu") for r in runs)
    metrics = ["loss", "bleu"] if with_bleu else ["loss"]
    systems = list(dict.fromkeys(r["system"] for r in runs))
    colours = {s: plt.cm.tab10.colors[i % 10] for i, s in enumerate(systems)}
    fig, axes = plt.subplots(1, len(metrics), figsize=(6.5 * len(metrics), 4.8), squeeze=False)
    labels = {"loss": "validation loss (label-smoothed, bits)",
              "bleu": "validation BLEU (fairseq's --eval-bleu)"}
    for ax, metric in zip(axes[0], metrics):
        for r in runs:
            pts = points(r, metric)
            if not pts:
                continue
            look = dict(color=colours[r["system"]], linestyle=STYLES[(r["seed"] - 1) % len(STYLES)], linewidth=1.2)
            ax.plot(*zip(*pts), label=f"{r['system']} seed {r['seed']}", **look)
            if r["record"].metric == metric:
                u, s = best_point(pts, metric)
                ax.plot([u], [s], marker="o", color=colours[r["system"]])
        ax.set_xlabel("updates")
        ax.set_ylabel(labels[metric])
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.suptitle(title + "\n(dot: the run's best validation by its stopping score, the checkpoint decoded)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="runs' folders (each with its train.log) or train.log files")
    p.add_argument("--out", required=True, help="the figure (.png)")
    p.add_argument("--table", help="the flatness table (markdown); default: printed")
    p.add_argument("--window", type=int, default=1500, help="updates before the best for the gain (default 1500)")
    p.add_argument("--title", default="Validation curves, every run")
    a = p.parse_args(argv)
    runs = sorted((load(r) for r in a.runs), key=lambda r: (r["system"], r["seed"]))
    figure(runs, a.out, a.title)
    rows = ["| run | stopped at | how | validations | stopping score | best @ update | gained over the "
            f"{a.window:,} updates before the best | best after the best | best valid BLEU | best valid loss |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        rec = r["record"]
        gain, after = flatness(r, a.window)
        how = {"patience": "the rule", "cap": "**the cap**"}.get(rec.stopped_by, rec.stopped_by)
        spec = ".2f" if rec.metric == "bleu" else ".3f"
        pts = points(r, rec.metric)
        best = f"{format(best_point(pts, rec.metric)[1], spec)} @ {rec.best_update}" if pts else "-"
        rows.append(f"| {r['name']} | {rec.stop_update} | {how} | {rec.validations} | {rec.metric} | {best} | "
                    f"{'-' if gain is None else format(gain, '+' + spec)} | {fmt(after, spec)} | "
                    f"{fmt(rec.best_bleu, '.2f')} | {fmt(rec.best_loss, '.3f')} |")
    table = "\n".join(rows) + "\n"
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)
    else:
        print(table, end="")


if __name__ == "__main__":
    main()
