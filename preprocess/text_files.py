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


def _double_bytes(sample: bytes, codec: str):
    """The (lead, trail) bytes of every two-byte character of `sample` decoded with `codec`, and
    how many non-ASCII characters it has; None where `codec` cannot decode it."""
    try:
        text = sample.decode(codec)
    except UnicodeDecodeError:
        return None
    pairs = [c.encode(codec) for c in text if ord(c) > 0x7F]
    return [b for b in pairs if len(b) == 2], len(pairs)


def likely_encoding(sample: bytes):
    """(what, iconv's name) of the encoding `sample` (some lines of a file that is not UTF-8) is
    most likely in, for UTF-16 and the Chinese ones; None for anything else. Chinese in GBK/GB2312
    has most characters in GB2312's frequent block (lead 0xA1-0xD7, trail 0xA1-0xFE), Big5 in its
    own (lead 0xA1-0xC6); Latin-1 text read as either lands mostly outside them (its accented
    letters are 0xC0-0xFF, each followed by an ASCII letter)."""
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")) or sample.count(0) * 5 >= len(sample) > 0:
        return "UTF-16", "utf-16"
    scores = []
    for name, codec, frequent in (("GBK/GB2312/GB18030", "gb18030", lambda b: 0xA1 <= b[0] <= 0xD7 and b[1] >= 0xA1),
                                  ("Big5", "big5", lambda b: 0xA1 <= b[0] <= 0xC6),
                                  ("Big5", "cp950", lambda b: 0xA1 <= b[0] <= 0xC6)):
        found = _double_bytes(sample, codec)
        if found and found[1]:
            hits = sum(map(frequent, found[0]))
            if hits >= 2 and hits >= 0.8 * found[1]:
                scores.append((hits / found[1], name, "gb18030" if codec == "gb18030" else "big5"))
    if not scores:
        return None
    _, name, codec = max(scores, key=lambda s: s[0])  # a tie: the first, GB
    return name, codec


def not_utf8(raw: bytes, start: int, path: str, line: int, sample: bytes = b"") -> PreprocessError:
    """The one-line error for byte `start` of `raw` (line `line` of `path`), the line's first byte
    that is not UTF-8 (a UnicodeDecodeError's `start`). The column counts characters, as an editor
    shows them. The advice names the encoding the line (and `sample`, more of the file) looks to
    be in: latin1 would turn GBK or Big5 Chinese into mojibake that every later step accepts."""
    column = len(raw[:start].decode("utf-8")) + 1
    found = likely_encoding(sample or raw)
    advice = f"it looks like {found[0]}: convert it with iconv -f {found[1]} -t utf-8" if found else \
        "convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8"
    return PreprocessError(f"not UTF-8 (byte 0x{raw[start]:02X} at column {column}); {advice}", path, line)


def encoding_sample(head: bytes, raw: bytes) -> bytes:
    """For likely_encoding: the whole lines of `head` (a file's start) that are not UTF-8, and the
    line `raw`. Lines that are UTF-8 (ASCII, or Chinese already converted) would only blur it."""
    whole = head[:head.rfind(b"\n") + 1].split(b"\n")  # no multi-byte character cut in two
    return b"\n".join([line for line in whole if not _is_utf8(line)] + [raw])


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def file_sample(path: str, raw: bytes) -> bytes:
    """encoding_sample of the first 64 KB of `path` (decompressed) and the line `raw`."""
    try:
        with _open(path, "the file", "rb") as f:
            head = f.read(1 << 16)
    except (PreprocessError,) + _DAMAGED:
        head = b""
    return encoding_sample(head, raw)


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
                    raise not_utf8(raw, e.start, path, n, file_sample(path, raw)) from None
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
