"""Reading the user's text files: UTF-8, plain or .gz/.xz; an unreadable, damaged or non-UTF-8
file is a one-line error naming it (and the line and column), never a traceback.

One place for every command that reads the user's text: mgsa-preprocess (source, target, trees,
alignments, codes, dictionaries), mgsa-train-parser (treebanks, --wordvec-text, --wordvec),
mgsa-probe and mgsa-compare. ``check_text`` reads a file through before any long work (and
counts its lines as fairseq does); ``lines`` reads it line by line.
"""

import gzip
import lzma
import zlib
from typing import Iterator, Tuple

from .errors import PreprocessError

# what a damaged compressed file raises while it is read: gzip.BadGzipFile (an OSError: not gzip
# at all), EOFError (cut short), zlib.error and lzma.LZMAError (corrupt data)
_DAMAGED = (OSError, EOFError, zlib.error, lzma.LZMAError)
_CHUNK = 1 << 20


def not_utf8(raw: bytes, start: int, path: str, line: int) -> PreprocessError:
    """The one-line error for byte `start` of `raw` (line `line` of `path`), the line's first byte
    that is not UTF-8 (a UnicodeDecodeError's `start`). The column counts characters, as an editor
    shows them."""
    column = len(raw[:start].decode("utf-8")) + 1
    return PreprocessError(f"not UTF-8 (byte 0x{raw[start]:02X} at column {column}); convert the file to UTF-8, "
                           f"e.g. iconv -f latin1 -t utf-8", path, line)


def _kind(path: str):
    return "gzip" if path.endswith(".gz") else "xz" if path.endswith(".xz") else None


def _open(path: str, what: str, mode: str):
    kind = _kind(path)
    opener = gzip.open if kind == "gzip" else lzma.open if kind == "xz" else open
    try:
        return opener(path, mode, **({"encoding": "utf-8"} if "t" in mode or mode == "r" else {}))
    except OSError as e:
        raise PreprocessError(f"cannot read {what}: {e.strerror}", path) from None


def _damaged(path: str, what: str, e: Exception, n: int) -> PreprocessError:
    kind = _kind(path)
    if isinstance(e, EOFError):
        return PreprocessError(f"the {kind} file ends early, after line {n} (cut short while copied?)", path)
    detail = str(e) or type(e).__name__
    return PreprocessError(f"cannot read {what}" + (f" as a {kind} file" if kind else "")
                           + f" ({detail}); a damaged download or a wrong suffix?", path)


def lines(path: str, what: str = "the file") -> Iterator[Tuple[int, str]]:
    """(line number, line) of a UTF-8 text file (.gz/.xz too), lines split at '\\n' only."""
    with _open(path, what, "rb") as f:  # bytes, decoded line by line: the error names the right line
        n = 0
        try:
            for n, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise not_utf8(raw, e.start, path, n) from None
                yield n, line
        except _DAMAGED as e:
            raise _damaged(path, what, e, n) from None


def check_text(path: str, what: str = "the file") -> int:
    """Read `path` through: its number of lines as Python's text mode and fairseq count them
    ('\\n', '\\r\\n' and '\\r' end a line; a last line without an end counts). A missing, damaged
    or non-UTF-8 file is a one-line error; decoded a megabyte at a time, re-read line by line
    only to locate a bad byte."""
    n, last = 0, "\n"
    try:
        with _open(path, what, "rt") as f:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                n += chunk.count("\n")
                last = chunk[-1]
    except UnicodeDecodeError:
        for _ in lines(path, what):  # raises the error at its line and column
            pass
        raise  # not reached: a byte that stops the decoder stops it line by line too
    except _DAMAGED as e:
        raise _damaged(path, what, e, n) from None
    return n + (last != "\n")
