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
was the best one (a run cut by the cap while still improving), and the training minutes
(fairseq's cumulative `train_wall`, which survives a resume).

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
FIELD = re.compile(r"\s*([a-z_]+)\s+([-+0-9.e]+|inf|nan)\s*")
EARLY_STOP = "early stop since valid performance hasn't improved"
CAP_STOP = re.compile(r"Stopping training due to num_updates: (\d+) >= max_update: (\d+)")


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
    train_minutes: Optional[float]

    def line(self) -> str:
        best = "no validation yet" if self.best_loss is None else \
            f"best valid loss {self.best_loss:.3f} at update {self.best_update}"
        how = {"patience": "stopped on validation", "running": "still running (or killed)",
               "cap": "cut by the cap" + (" while still improving" if self.improving_at_end else "")}[self.stopped_by]
        mins = "" if self.train_minutes is None else f", {self.train_minutes:.1f} training minutes"
        return f"{self.log}: update {self.stop_update}, {best} ({self.validations} validations), {how}{mins}"


def fields(text: str) -> dict:
    out = {}
    for part in text.split("|"):
        m = FIELD.fullmatch(part)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def read_train_log(path: str) -> Summary:
    """The run's stopping record from its train.log (appended to across resumes)."""
    valids, last_update, wall, stopped_by = [], 0, None, "running"
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
                if "train_wall" in v:
                    wall = v["train_wall"]
                continue
            if EARLY_STOP in line:
                stopped_by = "patience"
            elif CAP_STOP.search(line) and stopped_by != "patience":
                stopped_by = "cap"
    if not valids:
        return Summary(path, last_update, None, None, 0, stopped_by, False, None if wall is None else wall / 60)
    # the first of equal bests, as fairseq keeps it (a new best must be strictly lower)
    best_loss, best_update = min(valids, key=lambda lv: (lv[0], lv[1]))
    improving = valids[-1][1] == best_update
    return Summary(path, last_update, best_loss, best_update, len(valids), stopped_by, improving,
                   None if wall is None else wall / 60)


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
