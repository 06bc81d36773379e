"""Progress bars (tqdm) that an error message can end cleanly.

A bar that is cleared (``leave=False``) ends with a carriage return, not a
newline: in a log file, or in a terminal that keeps the cursor on that line, the
next message would share the bar's line. ``end_line`` closes any bar still open
and ends the line if a bar has drawn since the last newline, so that an error
is printed on a line of its own.
"""

import sys

_drawn = False  # a bar has drawn on stderr since the last end_line()


def bar(**kwargs):
    """A tqdm bar on stderr, cleared when done (``leave=False``); ``disable`` as tqdm's."""
    global _drawn
    from tqdm import tqdm

    kwargs.setdefault("leave", False)
    b = tqdm(**kwargs)
    if not b.disable:
        _drawn = True
    return b


def end_line(stream=None):
    """Close open bars; start a new line on ``stream`` (stderr) if a bar drew on the current one."""
    global _drawn
    from tqdm import tqdm

    for b in list(getattr(tqdm, "_instances", ())):
        b.close()
    if _drawn:
        stream = stream or sys.stderr
        stream.write("\n")
        stream.flush()
        _drawn = False


def duration(seconds: float) -> str:
    """A span of time as the progress lines print it: 1h02m, 3m05s, 42s."""
    seconds = int(round(seconds))
    h, m, s = seconds // 3600, seconds // 60 % 60, seconds % 60
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"
