"""Where and why a fairseq-train run stopped, read from its train.log (fairseq's own lines, left
as they are). The one reader of these facts: mgsa-compare's table (runs.read_stop) and the
recipes' stopping record (stopping.py summary) both print what it returns.

A log may hold several sessions of one run (appended across resumes); the stop is that of the
last session, the validations and the minutes are the run's.
"""

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Dict, List, Optional

# fairseq-train's lines that say why it stopped (fairseq_cli/train.py); none of them and a
# "done training": its loop ran out of epochs (--max-epoch)
STOPS = (("early stop since valid performance hasn't improved", "early stop (patience)"),
         ("Stopping training due to num_updates", "max-update"),
         ("Stopping training due to cumulative_training_time", "stop-time"),
         ("stopping training because current learning rate", "stop-min-lr"))
CAPS = ("max-update", "max-epoch", "stop-time")
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \|", flags=re.M)
VALID_LINE = re.compile(r"\| valid on '([^']*)' subset \|(.*)$")
FIELD = re.compile(r"\s*([a-z_0-9]+)\s+([-+0-9.e]+|inf|nan)\s*")
UPDATES = re.compile(r"\bnum_updates[ =](\d+)")
INNER = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \| INFO \| train_inner \|", flags=re.M)
# a gap between two of a session's lines this many times its median gap between progress lines, and
# at least PAUSE_SECONDS, is a pause (a stopped process, a suspended machine), not training: tiny runs
# log within a second, so the floor keeps a validation or a checkpoint's save from counting as one
PAUSE_FACTOR = 10
PAUSE_SECONDS = 300
# fairseq-train's first line of a session: its whole configuration (fairseq_cli/train.py's main)
SESSION = re.compile(r"^.*\| fairseq_cli\.train \| \{'_name'", flags=re.M)
DONE = re.compile(r"done training in ([\d.]+) seconds")
PATIENCE = re.compile(r"'patience': (-?\d+)")
METRIC = re.compile(r"'best_checkpoint_metric': '([^']+)'")


@dataclass
class TrainLog:
    log: str                         # the path as given
    stop: str                        # a name of STOPS, 'max-epoch', or 'unfinished' (killed or running)
    stop_update: Optional[int]       # the last update the log reports
    best_loss: Optional[float]       # the lowest validation loss (fairseq's `loss`)
    best_update: Optional[int]       # the update of the best validation by `metric` (the first of equal ones, as
    #                                  fairseq keeps it)
    best_bleu: Optional[float]       # the highest validation BLEU (--eval-bleu)
    validations: int
    improving_at_end: Optional[bool]  # the last validation was a new best (None: no validation)
    patience: Optional[int]          # the run's --patience, from its logged configuration
    recent_gain: Optional[float]     # how much the best score improved over the last `patience` validations (loss: fell
    #                                  by, bleu: rose by)
    train_minutes: Optional[float]   # summed over the log's sessions: fairseq's "done training" seconds, or the
    #                                  clock of its lines for a session killed or still running; pauses not counted
    metric: str = "loss"             # the run's --best-checkpoint-metric: loss, or bleu (lower / higher is better)
    paused_minutes: float = 0.0      # the pauses found between the log's lines, left out of train_minutes

    @property
    def capped(self) -> bool:
        """A cap (--max-update, --max-epoch, --stop-time-hours) stopped it while still improving."""
        return self.stop in CAPS and self.improving_at_end is True

    @property
    def stopped_by(self) -> str:
        """patience, cap, min-lr or running: the recipes' coarse names."""
        if self.stop.startswith("early stop"):
            return "patience"
        return {"unfinished": "running", "stop-min-lr": "min-lr"}.get(self.stop, "cap")


def read_text(log: str) -> str:
    with open(log, encoding="utf-8", errors="replace") as f:  # a log: a stray byte must not stop the reading
        return f.read()


def validations(text: str) -> List[Dict[str, float]]:
    """The figures of every validation line of the first validation subset (the one fairseq's
    --patience watches): {'loss': 7.27, 'num_updates': 2, 'best_loss': ...}."""
    out, subset = [], None
    for line in text.splitlines():
        m = VALID_LINE.search(line)
        if not m or (subset is not None and m.group(1) != subset):
            continue
        subset = m.group(1)
        figures = {}
        for part in m.group(2).split("|"):
            f = FIELD.fullmatch(part)
            if f:
                figures[f.group(1)] = float(f.group(2))
        out.append(figures)
    return out


def clock_minutes(text: str) -> Optional[float]:
    """Minutes between the first and the last time-stamped line."""
    stamps = STAMP.findall(text)
    if len(stamps) < 2:
        return None
    return (datetime.fromisoformat(stamps[-1]) - datetime.fromisoformat(stamps[0])).total_seconds() / 60


def improving_at_end(valid: List[Dict[str, float]]) -> Optional[bool]:
    """Whether the last validation was a new best: by fairseq's own best_<metric> figure when it
    logs one (it does when it saves checkpoints; lower or higher is its --best-checkpoint-metric's
    direction), else by the loss (lower is better). Equal is not better (fairseq's rule)."""
    if not valid:
        return None
    if len(valid) == 1:
        return True
    best = next((k for k in valid[-1] if k.startswith("best_")), None)
    if best and all(best in v for v in valid[-2:]):
        return valid[-1][best] != valid[-2][best]
    losses = [v["loss"] for v in valid if "loss" in v]
    return len(losses) == len(valid) and losses[-1] < min(losses[:-1])


def last_stop(text: str, done: List[re.Match]) -> str:
    """The stop of the log's last session."""
    tail = text[done[-1].end():] if done else text
    if not done or UPDATES.search(tail):  # trained after its last "done": killed or running
        return "unfinished"
    session = text[:done[-1].start()]
    if len(done) > 1:
        session = session[done[-2].end():]
    found = [(session.rfind(marker), name) for marker, name in STOPS if marker in session]
    return max(found)[1] if found else "max-epoch"


def paused_minutes(session: str) -> float:
    """The minutes of a session's gaps between two consecutive lines longer than both PAUSE_SECONDS and
    PAUSE_FACTOR times its median gap between fairseq's progress lines (train_inner, every
    --log-interval updates): a process stopped and continued (kill -STOP / -CONT) or a suspended
    machine, whose time fairseq's own clock counts as training. Without three progress lines nothing
    is called a pause."""
    inner = [datetime.fromisoformat(t) for t in INNER.findall(session)]
    if len(inner) < 3:
        return 0.0
    steps = sorted((b - a).total_seconds() for a, b in zip(inner, inner[1:]))
    limit = max(PAUSE_FACTOR * steps[len(steps) // 2], PAUSE_SECONDS)
    stamps = [datetime.fromisoformat(t) for t in STAMP.findall(session)]
    gaps = ((b - a).total_seconds() for a, b in zip(stamps, stamps[1:]))
    return sum(g for g in gaps if g > limit) / 60


def session_minutes(text: str):
    """(training minutes, paused minutes) summed over the log's sessions (each starts with
    fairseq-train's configuration line; a log without one is one session). A session's training time:
    its "done training" seconds, and the clock of its lines after the last of them when it went on
    (killed or running); a session killed before its "done" counts the clock of its lines, so a run
    resumed after a kill keeps those minutes. The pauses found in a session are taken out of its
    time and returned apart. Training minutes are None when no session says anything of its time."""
    starts = [m.start() for m in SESSION.finditer(text)] or [0]
    starts[0] = 0
    total, paused, known = 0.0, 0.0, False
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        session = text[begin:end]
        done = list(DONE.finditer(session))
        tail = session[done[-1].end():] if done else session
        span = clock_minutes(tail) if (not done or UPDATES.search(tail)) else None
        if not done and span is None:
            continue
        pause = paused_minutes(session)
        total += max(sum(float(m.group(1)) for m in done) / 60 + (span or 0.0) - pause, 0.0)
        paused += pause
        known = True
    return (total if known else None), paused


def read_train_log(path: str) -> TrainLog:
    """The stopping record of a fairseq-train log (OSError when it cannot be read)."""
    text = read_text(path)
    valid = validations(text)
    updates = UPDATES.findall(text)
    done = list(DONE.finditer(text))
    stop = last_stop(text, done)
    minutes, paused = session_minutes(text)
    patience = PATIENCE.findall(text)
    patience = int(patience[-1]) if patience else None
    metrics = METRIC.findall(text)
    metric = "bleu" if metrics and metrics[-1] == "bleu" else "loss"
    # (score, update), lower is better: the BLEU negated; ties: the earlier update, as fairseq keeps the first best
    scored = [(v[metric] if metric == "loss" else -v[metric], int(v.get("num_updates", 0)))
              for v in valid if metric in v]
    best_update = gain = None
    if scored:
        best, best_update = min(scored)
        if patience and patience > 0 and len(scored) > patience:
            gain = min(score for score, _ in scored[:-patience]) - best
    losses = [v["loss"] for v in valid if "loss" in v]
    bleus = [v["bleu"] for v in valid if "bleu" in v]
    return TrainLog(path, stop, int(updates[-1]) if updates else None, min(losses) if losses else None, best_update,
                    max(bleus) if bleus else None, len(valid), improving_at_end(valid), patience, gain,
                    None if minutes is None else round(minutes, 2), metric, round(paused, 2))
