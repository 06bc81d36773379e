"""Chinese word segmentation, run once: the words that BPE splits, the parser reads and the trees
hold are the words this step writes (``mgsa-segment-zh``).

A line is cut into tokens in this order:

* existing whitespace (ASCII or the ideographic space U+3000; a byte-order mark and the
  zero-width space count as spaces) separates tokens: no token crosses
  it (a run of Chinese characters between two spaces may still be cut further; text the user
  has segmented already goes to mgsa-preprocess as it is, without this step);
* a run of letters or digits other than Chinese characters (ASCII or full-width: ``GPU``,
  ``2017``, ``ＧＰＵ``, ``iPhone6``, with decimals ``3.14`` and ``１２．５``) is one token;
* a run of one dash or ellipsis character (``……``, ``——``, ``...``) is one token; any other
  punctuation or symbol, full-width or not, is a token of its own;
* a run of Chinese characters is cut into words by jieba (its dictionary, HMM for unknown words),
  with the words of ``--user-dict`` added.

These rules read a line as grapheme clusters (the ``regex`` package's ``\\X``): a character with
its combining marks, variation selectors and joiners (``José`` written with a combining accent,
``❤️``, emoji joined by U+200D) is one piece, classed by its base character and never cut; an
invisible format character that is a cluster of its own (U+2060 word joiner, a soft hyphen, a
direction mark) goes with the piece before it. No token is then an invisible character alone,
except one that has nothing before it to join.

``--t2s`` converts Traditional characters to Simplified first (OpenCC's t2s table), the words of
``--user-dict`` too (a Traditional entry then applies to the converted text). Nothing else
is changed: no case folding, no escaping, no full-width -> ASCII mapping. One output line per
input line, an empty or blank line gives an empty line. An ``--output`` ending in ``.gz`` or ``.xz`` is
written compressed so (as an input of that name is read).

jieba and opencc are imported here only, when a Segmenter is made: the other commands do not need
them. jieba's prefix-dictionary cache lives in the user's cache folder (``$XDG_CACHE_HOME`` or
``~/.cache``, ``mgsa-preprocess/jieba``), written there atomically by jieba, not in a shared /tmp.
"""

import argparse
import functools
import gzip
import io
import logging
import lzma
import os
import re
import sys
import time
import unicodedata
import warnings
from typing import List, Optional

import regex

from .errors import PreprocessError
from .progress import duration, end_line

# CJK unified ideographs and extension A, compatibility ideographs, extensions B and beyond,
# and the ideographic zero of Chinese dates (二〇一七)
HAN = "\u3007\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\U00020000-\U0003134F"
_TOKEN = re.compile(
    rf"(?P<han>[{HAN}]+)"
    # letters/digits that are not Chinese characters (\w less _ and Han), decimals kept whole
    rf"|(?P<word>(?:(?![{HAN}])[^\W_])+(?:[.．](?:(?![{HAN}])\d)+)*)"
    r"|(?P<run>(?P<repeated>[…—\-.·～~])(?P=repeated)+)"
    r"|(?P<other>\S)")
# invisible characters that separate like a space and are no token: a byte-order mark (at a file's
# start, or left inside by concatenated files) and the zero-width space of web text
_INVISIBLE = re.compile("[\ufeff\u200b]")
_CLUSTER = regex.compile(r"\X")
# what a base character can carry: marks (combining accents, variation selectors) and invisible
# format characters (U+200C/U+200D joiners, U+2060 word joiner, soft hyphen, direction marks)
_CARRIED = {"Mn", "Mc", "Me", "Cf"}
# jieba user dictionary lines: word [frequency] [part of speech]
_DICT_LINE = re.compile(r"^(\S+)(?:\s+(\d+))?(?:\s+([A-Za-z]+))?$")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mgsa-preprocess", "jieba")


def read_user_dict(path: str) -> List[tuple]:
    """(word, frequency or None, line number) of a jieba user dictionary, checked line by line.
    A word that holds anything but Chinese characters is refused: the segmenter keeps Latin
    letters, digits and punctuation as tokens of their own, so such a word could never apply."""
    from .text_files import lines

    words = []
    for n, line in lines(path, "the user dictionary"):
        line = line.strip().lstrip("\ufeff")
        if not line:
            continue
        m = _DICT_LINE.match(line)
        if not m:
            raise PreprocessError(f"expected 'word [frequency] [tag]' (jieba's user dictionary), got {line!r}",
                                  path, n)
        word = m.group(1)
        if not re.fullmatch(f"[{HAN}]+", word):
            raise PreprocessError(f"{word!r} is not made of Chinese characters only; letters, digits and "
                                  "punctuation are tokens of their own, so it could never apply", path, n)
        words.append((word, int(m.group(2)) if m.group(2) else None, n))
    return words


def _jieba_tokenizer(user_words):
    with warnings.catch_warnings():  # jieba's import: pkg_resources' deprecation, 3.12's escape warnings
        warnings.simplefilter("ignore")
        import jieba
    logging.getLogger("jieba").setLevel(logging.WARNING)  # no "Building prefix dict ..." on stderr
    tokenizer = jieba.Tokenizer()
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        tokenizer.tmp_dir = cache_dir()
    except OSError:
        pass  # an unwritable home: jieba's default (the system's temporary folder)
    for word, freq, _ in user_words:
        tokenizer.add_word(word, freq)
    return tokenizer


class Segmenter:
    """Segments lines of Chinese text; ``user_dict``: a jieba user dictionary file."""

    def __init__(self, t2s: bool = False, user_dict: Optional[str] = None):
        self._converter = None
        if t2s:
            from opencc import OpenCC

            self._converter = OpenCC("t2s")
        self.user_words = read_user_dict(user_dict) if user_dict else []
        if self._converter is not None:  # the text is Simplified by now: so must the words be, to match it
            self.user_words = [(self._converter.convert(w), f, n) for w, f, n in self.user_words]
        self._tokenizer = _jieba_tokenizer(self.user_words)

    def tokens(self, line: str) -> List[str]:
        if self._converter is not None:
            line = self._converter.convert(line)
        pieces = _pieces(_INVISIBLE.sub(" ", line))
        # the rules run on one base character a piece; a match's span is then a span of pieces
        bases = "".join(base for base, _ in pieces)
        out = []
        for m in _TOKEN.finditer(bases):
            if m.group("han"):
                i = m.start()
                for word in self._tokenizer.lcut(m.group("han"), HMM=True):
                    out.append("".join(text for _, text in pieces[i:i + len(word)]))
                    i += len(word)
            else:
                out.append("".join(text for _, text in pieces[m.start():m.end()]))
        return out

    def segment(self, line: str) -> str:
        """The line's tokens joined by single spaces (no line end)."""
        return " ".join(self.tokens(line))


def _pieces(line: str) -> List[List[str]]:
    """The line as [base character, text] pieces: its grapheme clusters, with a cluster that has no
    base of its own (a mark or format character after a space, a lone word joiner) joined to the
    piece before it in the same word, else to the next; a whitespace piece is [" ", " "]."""
    out: List[List[str]] = []
    pending = ""  # base-less text waiting for the next base character
    for cluster in _CLUSTER.findall(line):
        # \X keeps a mark after a space with the space: a space stays a separator, alone
        units = list(cluster) if len(cluster) > 1 and any(c.isspace() for c in cluster) else [cluster]
        for unit in units:
            if unit.isspace():
                if pending:  # nothing in this word to join: a token of its own, never a lost character
                    out.append([pending[0], pending])
                    pending = ""
                out.append([" ", " "])
            elif all(unicodedata.category(c) in _CARRIED for c in unit):
                if out and out[-1][0] != " ":
                    out[-1][1] += unit
                else:
                    pending += unit
            else:
                base = next(c for c in unit if unicodedata.category(c) not in _CARRIED)
                out.append([base, pending + unit])
                pending = ""
    if pending:
        out.append([pending[0], pending])
    return out


@functools.lru_cache(maxsize=4)
def _segmenter(t2s: bool, user_dict: Optional[str]) -> Segmenter:
    return Segmenter(t2s, user_dict)


def segment_line(line: str, t2s: bool = False, user_dict: Optional[str] = None) -> str:
    """One line of Chinese text segmented into space-separated tokens (see the module's docstring).
    The segmenter for a (t2s, user_dict) pair is made once and kept."""
    return _segmenter(t2s, user_dict).segment(line)


class _GzipText(io.TextIOWrapper):
    """UTF-8 text written gzip-compressed into `path`, the header naming `name` (the file the
    temporary one becomes, less .gz: what gunzip -N restores), not the temporary name."""

    def __init__(self, path: str, name: str):
        self._raw = open(path, "wb")
        super().__init__(gzip.GzipFile(name, "wb", fileobj=self._raw), encoding="utf-8")

    def close(self):
        try:
            super().close()
        finally:
            self._raw.close()  # GzipFile leaves a file object it was given open


def _open_for_writing(path: str, mode: str, name: Optional[str] = None, compress: bool = False):
    """`path` opened for writing, its folder made; an error names `name` (the user's file).
    compress: gzip or xz as `name` ends (.gz, .xz), as an input of that name is read."""
    name = name or path
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if compress and name.endswith(".gz"):
            return _GzipText(path, os.path.basename(name)[:-3])
        if compress and name.endswith(".xz"):
            return lzma.open(path, "wt", encoding="utf-8")
        return open(path, mode, encoding="utf-8")
    except OSError as e:
        raise PreprocessError(f"cannot write: {e.strerror}", name) from None


def segment_file(input_path: str, output_path: str, t2s: bool = False, user_dict: Optional[str] = None,
                 log_path: Optional[str] = None, quiet: bool = False) -> dict:
    """Segment `input_path` into `output_path`, line for line. The input (and the user dictionary)
    are read through first; the output is written beside its place and moved there at the end, so
    an error leaves no half-written file. Returns what the log's last line says."""
    from .progress import bar
    from .text_files import check_text, lines

    if os.path.abspath(input_path) == os.path.abspath(output_path):
        raise PreprocessError("--output is the input file; write the segmented text elsewhere", output_path)
    if os.path.isdir(output_path):  # found now, not by the last move after the whole input is segmented
        raise PreprocessError("--output is a folder; give the name of the file to write", output_path)
    total = check_text(input_path, "the input")
    segmenter = Segmenter(t2s, user_dict)
    log = _open_for_writing(log_path, "a") if log_path else None
    tmp = f"{output_path}.part{os.getpid()}"
    start, tokens, every = time.time(), 0, max(1, total // 20)
    try:
        with _open_for_writing(tmp, "w", output_path, compress=True) as out, \
                bar(total=total, unit="line", desc="mgsa-segment-zh", disable=quiet or None) as progress:
            for n, line in lines(input_path, "the input"):
                words = segmenter.tokens(line)
                tokens += len(words)
                out.write(" ".join(words) + "\n")
                progress.update()
                if log and (n % every == 0 or n == total):
                    log.write(f"mgsa-segment-zh: {n}/{total} lines, {duration(time.time() - start)}\n")
                    log.flush()
        os.replace(tmp, output_path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    summary = {"lines": total, "tokens": tokens, "seconds": round(time.time() - start, 2),
               "t2s": t2s, "user_dict": user_dict, "user_words": len(segmenter.user_words)}
    if log:
        log.write(f"mgsa-segment-zh: done, {input_path} -> {output_path}: {total} lines, {tokens} tokens, "
                  f"{duration(summary['seconds'])}" + (", Traditional -> Simplified" if t2s else "")
                  + (f", {len(segmenter.user_words)} user words from {user_dict}" if user_dict else "") + "\n")
        log.close()
    return summary


def get_parser():
    p = argparse.ArgumentParser(prog="mgsa-segment-zh", description=__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True, metavar="FILE",
                   help="Chinese text, UTF-8 (.gz/.xz too), one sentence a line (GBK/GB18030 or Big5: "
                        "iconv -f gb18030 or -f big5 -t utf-8 first)")
    p.add_argument("--output", required=True, metavar="FILE", help="segmented text, one line per input line")
    p.add_argument("--t2s", action="store_true", help="convert Traditional characters to Simplified first (OpenCC t2s)")
    p.add_argument("--user-dict", metavar="FILE", help="jieba user dictionary: 'word [frequency] [tag]' a line")
    p.add_argument("--log", metavar="FILE", help="append progress and a summary line to FILE")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv=None):
    """Console entry point: an input problem ends in one line naming file and line, exit status 1."""
    args = get_parser().parse_args(argv)
    try:
        segment_file(args.input, args.output, args.t2s, args.user_dict, args.log, args.quiet)
    except PreprocessError as e:
        end_line()
        print(f"mgsa-segment-zh: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
