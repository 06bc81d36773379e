"""Applying subword-nmt BPE codes (``--bpe-codes``) to the source and target text.

The segmented text goes to the work folder and is what fairseq binarizes; the
words it came from are the original text, so parsing and the tree check see the
words while the phrase spans count the pieces.
"""

import os
from functools import partial
from typing import Optional

from .errors import PreprocessError

_BPE = None  # one BPE object per worker process, built by _init


def _init(codes_path: str, separator: str):
    global _BPE
    from subword_nmt.apply_bpe import BPE
    with open(codes_path, encoding="utf-8") as f:
        _BPE = BPE(f, separator=separator)


def _segment(lines):
    # Words are split like fairseq splits tokens (any whitespace), so the
    # segmented line has exactly the pieces of the original line's words.
    return ["".join((" ".join(_BPE.segment_tokens(line.split())), "\n")) for line in lines]


def _chunks(path: str, size: int = 2000):
    with open(path, encoding="utf-8") as f:
        chunk = []
        for line in f:
            chunk.append(line)
            if len(chunk) == size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def apply_bpe(codes_path: str, in_path: str, out_path: str, separator: str = "@@", workers: int = 1,
              progress: bool = True, total: Optional[int] = None) -> int:
    """Segment ``in_path`` line by line into ``out_path``; return the number of lines."""
    from .binarize import ordered_map
    from .progress import bar as progress_bar

    if not os.path.exists(codes_path):
        raise PreprocessError("BPE codes file not found", codes_path)
    try:
        _init(codes_path, separator)  # in this process too: fails early on a bad codes file
    except (Exception, SystemExit) as e:  # subword-nmt raises assorted errors, or exits, on a malformed file
        raise PreprocessError(f"cannot read BPE codes ({type(e).__name__}: {e}; see the message above)",
                              codes_path) from None
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    n = 0
    with progress_bar(total=total, desc=f"bpe {os.path.basename(in_path)}", unit="line",
                      disable=not progress) as bar, open(out_path + ".partial", "w", encoding="utf-8") as out:
        for seg in ordered_map(_segment, _chunks(in_path), workers,
                               initializer=partial(_init, codes_path, separator)):
            out.writelines(seg)
            n += len(seg)
            bar.update(len(seg))
    os.replace(out_path + ".partial", out_path)
    return n
