"""The check's results: one JSON object a line in OUT/results.jsonl, appended as soon as a run
or a phase ends, so that a check cut at any point keeps everything it measured.

Every line has "phase" and "kind": "phase" (written by scripts/gpu_check.sh when a phase process
ends: its exit status and time), "start" (a run begins: a run with a start and no result was cut
or crashed), "run" (a train-and-decode run), "invariant" (a system's invariants), "env", "data".
"""

import json
import os
import time

RESULTS = "results.jsonl"


def append(out_dir, record):
    """Appends one line with a single write on an O_APPEND descriptor: lines written at once by
    several worker processes stay whole."""
    record = {"time": round(time.time(), 1), **record}
    line = (json.dumps(record, sort_keys=False) + "\n").encode()
    fd = os.open(os.path.join(out_dir, RESULTS), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return record


def read(out_dir):
    """Every record so far (a last line cut mid-write is skipped)."""
    path = os.path.join(out_dir, RESULTS)
    if not os.path.exists(path):
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def finished(out_dir, kind):
    """Names of the runs of `kind` that have a result."""
    return {r["name"] for r in read(out_dir) if r.get("kind") == kind}
