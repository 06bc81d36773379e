"""The stopping rule of the recipes, written once (the demo can import it too): train until the
validation loss has not improved for PATIENCE validations in a row, one every VALID_INTERVAL
updates, or until MAX_UPDATE updates (the cap), whichever comes first; the checkpoint with the
best validation loss is the one decoded. It is fairseq's own --patience, made regular: no
validation at epoch ends (an epoch is not a multiple of the interval), so PATIENCE x
VALID_INTERVAL updates without a new best always stop a run. The cap is in updates, not time,
so where a run stops does not depend on the machine's load.

    python examples/common/stopping.py args --patience 4 --valid-interval 250 --max-update 6000
    python examples/common/stopping.py summary CKPT_DIR/train.log [--json]

`summary` reads what fairseq writes to train.log (its standard lines, left as they are): the
update the run stopped at, its best validation loss and the update of that, how it stopped
(`patience`, `cap`, or `running` when neither line is there yet), whether the last validation
was the best one (a run cut by the cap while still improving), by how much the best loss fell
over the last PATIENCE validations (the run's own --patience, read from its logged
configuration: how far from flat a run cut by the cap was), and the run's minutes (fairseq's
`wall`: training and validation since the start, carried across a resume by the checkpoint).

A resumed run keeps its best checkpoint, but fairseq counts the validations without a new
best afresh after a resume (its counter is not in the checkpoint): it can run up to PATIENCE
validations longer than one that was not stopped.
"""

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from typing import List, Optional

# Never reached: epoch-end validation and saving off, only every VALID_INTERVAL updates.
NO_EPOCH_INTERVAL = "1000000"

VALID_LINE = re.compile(r"\| valid on '[^']*' subset \|(.*)$")
TRAIN_LINE = re.compile(r"\| (?:train_inner|train) \|(.*)$")
# "| loss 4.8 | num_updates 1200" (epoch and validation lines), "loss=4.8, num_updates=1200" (train_inner)
FIELD = re.compile(r"\s*([a-z_]+)(?:=|\s+)([-+0-9.e]+|inf|nan)\s*")
EARLY_STOP = "early stop since valid performance hasn't improved"
CAP_STOP = re.compile(r"Stopping training due to num_updates: (\d+) >= max_update: (\d+)")
PATIENCE = re.compile(r"'patience': (-?\d+)")


def fairseq_args(patience: int, valid_interval: int, max_update: int) -> List[str]:
    """The fairseq-train options of the rule."""
    if patience < 1 or valid_interval < 1 or max_update < 1:
        raise ValueError(f"patience, valid interval and max update must be at least 1 "
                         f"(got {patience}, {valid_interval}, {max_update})")
    return ["--patience", str(patience), "--best-checkpoint-metric", "loss",
            "--validate-interval-updates", str(valid_interval), "--save-interval-updates", str(valid_interval),
            "--validate-interval", NO_EPOCH_INTERVAL, "--save-interval", NO_EPOCH_INTERVAL,
            "--max-update", str(max_update)]


@dataclass
class Summary:
    log: str
    stop_update: int              # the last update the log reports
    best_loss: Optional[float]    # the best validation loss
    best_update: Optional[int]    # the update of that validation
    validations: int
    stopped_by: str               # patience, cap or running
    improving_at_end: bool        # the last validation was the best one
    patience: Optional[int]       # the run's --patience
    recent_gain: Optional[float]  # best loss before the last `patience` validations minus the best loss
    train_minutes: Optional[float]

    def line(self) -> str:
        best = "no validation yet" if self.best_loss is None else \
            f"best valid loss {self.best_loss:.3f} at update {self.best_update}"
        how = {"patience": "stopped on validation", "running": "still running (or killed)",
               "cap": "cut by the cap" + (" while still improving" if self.improving_at_end else "")}[self.stopped_by]
        if self.recent_gain is not None and self.stopped_by == "cap":
            how += f" (best loss down {self.recent_gain:.3f} over the last {self.patience} validations)"
        mins = "" if self.train_minutes is None else f", {self.train_minutes:.1f} minutes"
        return f"{self.log}: update {self.stop_update}, {best} ({self.validations} validations), {how}{mins}"


def fields(text: str) -> dict:
    out = {}
    for part in re.split(r"[|,]", text):
        m = FIELD.fullmatch(part)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def read_train_log(path: str) -> Summary:
    """The run's stopping record from its train.log (appended to across resumes)."""
    valids, last_update, wall, stopped_by, patience = [], 0, None, "running", None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = VALID_LINE.search(line)
            if m:
                v = fields(m.group(1))
                if "loss" in v and "num_updates" in v:
                    valids.append((v["loss"], int(v["num_updates"])))
                    last_update = max(last_update, int(v["num_updates"]))
                continue
            m = TRAIN_LINE.search(line)
            if m:
                v = fields(m.group(1))
                if "num_updates" in v:
                    last_update = max(last_update, int(v["num_updates"]))
                if "wall" in v:
                    wall = v["wall"]
                continue
            m = PATIENCE.search(line)
            if m:
                patience = int(m.group(1))
            if EARLY_STOP in line:
                stopped_by = "patience"
            elif CAP_STOP.search(line) and stopped_by != "patience":
                stopped_by = "cap"
    minutes = None if wall is None else wall / 60
    if not valids:
        return Summary(path, last_update, None, None, 0, stopped_by, False, patience, None, minutes)
    # the first of equal bests, as fairseq keeps it (a new best must be strictly lower)
    best_loss, best_update = min(valids, key=lambda lv: (lv[0], lv[1]))
    improving = valids[-1][1] == best_update
    gain = None
    if patience and patience > 0 and len(valids) > patience:
        gain = min(loss for loss, _ in valids[:-patience]) - best_loss
    return Summary(path, last_update, best_loss, best_update, len(valids), stopped_by, improving, patience, gain,
                   minutes)


def main(argv=None):
    p = argparse.ArgumentParser(prog="stopping.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("args", help="the fairseq-train options of the rule, one a line")
    a.add_argument("--patience", type=int, required=True)
    a.add_argument("--valid-interval", type=int, required=True)
    a.add_argument("--max-update", type=int, required=True)
    s = sub.add_parser("summary", help="where each run stopped and why, from its train.log")
    s.add_argument("logs", nargs="+")
    s.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        if args.command == "args":
            print("\n".join(fairseq_args(args.patience, args.valid_interval, args.max_update)))
            return 0
        summaries = [read_train_log(path) for path in args.logs]
    except (ValueError, OSError) as e:
        print(f"stopping.py: error: {e}", file=sys.stderr)
        return 2
    for s in summaries:
        print(json.dumps(asdict(s)) if args.json else s.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
