"""The stopping rule of the recipes and the demo, written once: train until the
validation score has not improved for PATIENCE validations in a row, one every VALID_INTERVAL
updates, or until MAX_UPDATE updates (the cap), whichever comes first; the checkpoint with the
best validation score is the one decoded. The score is the validation loss (the recipes'
default) or, with --metric bleu, the validation BLEU of greedy decoding (fairseq's --eval-bleu;
the demo's rule): on a small corpus the loss keeps falling by a few thousandths long after the
translations stop changing, so a rule on the loss only stops at the cap, while the BLEU of the
translations stops rising. It is fairseq's own --patience, made regular: no
validation at epoch ends (an epoch is not a multiple of the interval), so PATIENCE x
VALID_INTERVAL updates without a new best always stop a run. The cap is in updates, not time,
so where a run stops does not depend on the machine's load.

    python -m fairseq_mgsa.analysis.compare.stopping args --patience 4 --valid-interval 250 --max-update 6000 [--metric bleu]
    python -m fairseq_mgsa.analysis.compare.stopping summary CKPT_DIR/train.log [--json]

`summary` prints what trainlog.py beside this file reads from train.log (fairseq's
standard lines, left as they are; mgsa-compare's table reads the same): the update the run
stopped at, its best validation loss (and BLEU) and the update of the best by the run's own
--best-checkpoint-metric, how it stopped (`patience`, `cap`,
`min-lr`, or `running` when the log's last session has not finished), whether the last validation
was the best one (a run cut by the cap while still improving), by how much the best loss fell
over the last PATIENCE validations (the run's own --patience, read from its logged
configuration: how far from flat a run cut by the cap was), and the run's minutes (fairseq's
"done training" seconds, summed over the sessions of a resumed run; the clock of its lines for
a session that has not finished).

A resumed run stops where the same run left alone would: fairseq keeps the count of validations
without a new best only in memory, so the plugin writes it into each checkpoint and reads it back
(fairseq_patches/patience.py). Checkpoints written before that hold no count: a run resumed from
one counts afresh and can stop later than PATIENCE validations after its best.
"""

import argparse
import json
import logging
import sys
from dataclasses import asdict, dataclass
from typing import List, Optional

from .trainlog import read_train_log as read_log

PROG = "python -m fairseq_mgsa.analysis.compare.stopping"

# Never reached: epoch-end validation and saving off, only every VALID_INTERVAL updates.
NO_EPOCH_INTERVAL = "1000000"
METRICS = ("loss", "bleu")
# greedy: the score only has to tell whether the translations still improve, and beam search
# would multiply the cost of every validation; the length limit (fairseq's documented example)
# keeps an untrained model's validation short
EVAL_BLEU_ARGS = '{"beam": 1, "max_len_a": 1.2, "max_len_b": 10}'


def fairseq_args(patience: int, valid_interval: int, max_update: int, metric: str = "loss",
                 remove_bpe: Optional[str] = None) -> List[str]:
    """The fairseq-train options of the rule; with metric 'bleu', `remove_bpe` is the BPE
    continuation marker to remove before scoring (fairseq's --eval-bleu-remove-bpe, e.g. '@@ ')."""
    if patience < 1 or valid_interval < 1 or max_update < 1:
        raise ValueError(f"patience, valid interval and max update must be at least 1 "
                         f"(got {patience}, {valid_interval}, {max_update})")
    if metric not in METRICS:
        raise ValueError(f"stopping metric {metric!r}: one of {', '.join(METRICS)} expected")
    if metric == "bleu":
        best = ["--eval-bleu", "--eval-bleu-args", EVAL_BLEU_ARGS, "--best-checkpoint-metric", "bleu",
                "--maximize-best-checkpoint-metric"] + (["--eval-bleu-remove-bpe", remove_bpe] if remove_bpe else [])
    else:
        best = ["--best-checkpoint-metric", "loss"]
    return ["--patience", str(patience), *best,
            "--validate-interval-updates", str(valid_interval), "--save-interval-updates", str(valid_interval),
            "--validate-interval", NO_EPOCH_INTERVAL, "--save-interval", NO_EPOCH_INTERVAL,
            "--max-update", str(max_update)]


@dataclass
class Summary:
    log: str
    stop_update: int              # the last update the log reports
    best_loss: Optional[float]    # the best validation loss
    best_bleu: Optional[float]    # the best validation BLEU (--metric bleu)
    best_update: Optional[int]    # the update of the best validation by the run's metric
    validations: int
    stopped_by: str               # patience, cap, min-lr or running
    improving_at_end: bool        # the last validation was the best one
    patience: Optional[int]       # the run's --patience
    recent_gain: Optional[float]  # how much the best score improved over the last `patience` validations
    train_minutes: Optional[float]
    paused_minutes: float = 0.0   # pauses between the log's lines, not in train_minutes

    @classmethod
    def of(cls, r) -> "Summary":
        """From trainlog.TrainLog."""
        return cls(r.log, r.stop_update or 0, r.best_loss, r.best_bleu, r.best_update, r.validations, r.stopped_by,
                   bool(r.improving_at_end), r.patience, r.recent_gain, r.train_minutes, r.paused_minutes)

    def line(self) -> str:
        if self.best_loss is None:
            best = "no validation yet"
        elif self.best_bleu is not None:
            best = f"best valid BLEU {self.best_bleu:.2f} at update {self.best_update} (best loss {self.best_loss:.3f})"
        else:
            best = f"best valid loss {self.best_loss:.3f} at update {self.best_update}"
        how = {"patience": "stopped on validation", "running": "still running (or killed)",
               "min-lr": "stopped at its minimum learning rate (--stop-min-lr)",
               "cap": "cut by the cap" + (" while still improving" if self.improving_at_end else "")}[self.stopped_by]
        if self.recent_gain is not None and self.stopped_by == "cap":
            how += (f" (best BLEU up {self.recent_gain:.2f}" if self.best_bleu is not None else
                    f" (best loss down {self.recent_gain:.3f}") + f" over the last {self.patience} validations)"
        mins = "" if self.train_minutes is None else f", {self.train_minutes:.1f} minutes"
        if self.paused_minutes:
            mins += f" ({self.paused_minutes:.1f} minutes paused, not counted)"
        return f"{self.log}: update {self.stop_update}, {best} ({self.validations} validations), {how}{mins}"


def read_train_log(path: str) -> Summary:
    """The run's stopping record from its train.log (appended to across resumes)."""
    return Summary.of(read_log(path))


def main(argv=None):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("args", help="the fairseq-train options of the rule, one a line")
    a.add_argument("--patience", type=int, required=True)
    a.add_argument("--valid-interval", type=int, required=True)
    a.add_argument("--max-update", type=int, required=True)
    a.add_argument("--metric", default="loss", help=f"the validation score: {' or '.join(METRICS)} (default loss)")
    a.add_argument("--remove-bpe", help="with --metric bleu: the BPE marker removed before scoring, e.g. '@@ '")
    s = sub.add_parser("summary", help="where each run stopped and why, from its train.log")
    s.add_argument("logs", nargs="+")
    s.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    # the libraries' INFO lines (fairseq's, matplotlib's) stay out of the rule's output
    logging.basicConfig(level=logging.WARNING)
    try:
        if args.command == "args":
            print("\n".join(fairseq_args(args.patience, args.valid_interval, args.max_update, args.metric,
                                          args.remove_bpe)))
            return 0
        summaries = [read_train_log(path) for path in args.logs]
    except (ValueError, OSError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    for s in summaries:
        print(json.dumps(asdict(s)) if args.json else s.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
