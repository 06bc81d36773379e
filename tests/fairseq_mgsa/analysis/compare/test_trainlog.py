"""trainlog.py's training minutes of a run resumed across sessions: a killed session counts the
clock of its lines, a finished one fairseq's "done training" seconds, and a long gap between
lines (a stopped process) is a pause, left out and reported apart."""

from datetime import datetime, timedelta

from fairseq_mgsa.analysis.compare.trainlog import read_train_log

T0 = datetime(2026, 11, 28, 8, 0, 0)
CONFIG = "| INFO | fairseq_cli.train | {'_name': None, 'checkpoint': {'best_checkpoint_metric': 'loss', 'patience': 10}}"


def line(seconds: float, text: str) -> str:
    return f"{(T0 + timedelta(seconds=seconds)).strftime('%Y-%m-%d %H:%M:%S')} {text}"


def session(start: float, updates: range, step: float, pause_after: int = None, pause: float = 0.0):
    """A session's lines: its configuration, then a progress line every `step` seconds, one for each
    of `updates` (a pause of `pause` seconds after the `pause_after`-th), a validation with each."""
    out, t = [line(start, CONFIG)], start
    for i, u in enumerate(updates):
        t += step + (pause if i == pause_after else 0.0)
        out.append(line(t, f"| INFO | train_inner | epoch 001:  {u} / 100 loss=5.0, ups=1.0, num_updates={u}, wall=0"))
        out.append(line(t + 1, f"| INFO | valid | epoch 001 | valid on 'valid' subset | loss {6 - u / 1000:.3f} | "
                               f"num_updates {u}"))
    return out, t + 1


def test_a_killed_session_and_pauses(tmp_path):
    # session 1: 10 progress lines 40 s apart, a 30-minute stop after the 4th, then killed (no "done")
    first, end1 = session(0, range(50, 550, 50), 40.0, pause_after=4, pause=1800.0)
    # session 2 resumes an hour later: 6 lines 40 s apart, a 20-minute stop after the 2nd, then done;
    # fairseq's own clock (the "done" seconds) counts the stop as training
    start2 = end1 + 3600
    second, end2 = session(start2, range(500, 800, 50), 40.0, pause_after=2, pause=1200.0)
    done_seconds = end2 - start2
    second += [line(end2, "| INFO | fairseq_cli.train | early stop since valid performance hasn't improved for "
                          "last 10 runs"),
               line(end2, f"| INFO | fairseq_cli.train | done training in {done_seconds:.1f} seconds")]
    log = tmp_path / "train.log"
    log.write_text("\n".join(first + second) + "\n")
    r = read_train_log(str(log))
    # a pause is the whole gap between the lines around the stop: the validation line 1 s after a
    # progress line, then the next progress line 40 s + the stop after that one
    gap1, gap2 = 1800.0 + 40 - 1, 1200.0 + 40 - 1
    killed = end1 - gap1  # the killed session's clock, less its pause
    finished = done_seconds - gap2
    assert r.train_minutes == round((killed + finished) / 60, 2)
    assert r.paused_minutes == round((gap1 + gap2) / 60, 2)
    assert r.stopped_by == "patience" and r.stop_update == 750


def test_no_pause_keeps_fairseqs_seconds(tmp_path):
    lines, end = session(0, range(50, 300, 50), 30.0)
    lines.append(line(end, "| INFO | fairseq_cli.train | done training in 153.0 seconds"))
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    r = read_train_log(str(log))
    assert r.train_minutes == round(153.0 / 60, 2) and r.paused_minutes == 0.0
