"""Moses tokenisation of Russian that detokenization undoes (the WMT16 En-Ru recipe's steps 02 and 08).

    python -m mgsa_preprocess.moses_ru tokenize [-a] [-j N] < raw > tokenized
    python -m mgsa_preprocess.moses_ru detokenize < tokenized > text

``sacremoses -l ru`` splits what Russian text writes without a space and its detokenizer does not
join it back: ``«Газпром»`` comes back as ``« Газпром »``, ``О'Нил`` as ``О 'Нил``, a score ``2:1``
as ``2: 1``, ``конец…`` as ``конец …``. Here the tokens are sacremoses' (``-l ru``), with:

* what one word of Russian news text holds kept whole (sacremoses' protected patterns): an
  apostrophe between letters (``О'Нил``, ``Д’Артаньян``), times and scores (``19:30``, ``2:1``),
  fractions (``1/8``) and ranges of numbers with a dash (``1990–2000``, ``0,5–1``);
* no XML escapes (``&quot;``, ``&apos;``): the tokens are the text's characters, nothing to undo;
* the detokenizer joining what Russian typography joins before Moses' rules do the rest:
  guillemets and „low-high“ quotes to the words they enclose (“ closes after „, opens
  otherwise, as in “English” quotes), an ellipsis to the word before it (to the word after it at a
  line's or quotation's start).

So the tokenized text of typographically written Russian detokenizes to the raw text, byte for
byte (tests/preprocess/test_moses_ru.py). Text spaced otherwise (``конец …``, ``2 : 1``) comes
back in the usual typography. Hyphens split with ``-a`` (``a @-@ b``) are joined as Moses joins them.
"""

import argparse
import sys
from functools import partial
from typing import List

# kept whole by the tokenizer: letters around an apostrophe (О'Нил); numbers (3,5 too) around a
# colon (19:30, 2:1), a slash (1/8, 24/7) or a dash (1990–2000, 0,5–1)
_NUMBER = r"\d+(?:[.,]\d+)*"
PROTECTED = [r"[^\W\d_]+(?:['’ʼ][^\W\d_]+)+", rf"{_NUMBER}(?:[:/–—]{_NUMBER})+"]
_OPENING = {"«", "„"}
_CLOSING = {"»", "”"}
_ELLIPSIS = {"…", "..."}


def _tokenizer():
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang="ru")


def tokenize_line(line: str, aggressive_dash_splits: bool = False, tokenizer=None) -> str:
    """One line's tokens, joined by single spaces (no line end)."""
    tokenizer = tokenizer or _tokenizer()
    return tokenizer.tokenize(line, aggressive_dash_splits=aggressive_dash_splits, return_str=True,
                              escape=False, protected_patterns=PROTECTED)


def join_marks(tokens: List[str]) -> List[str]:
    """The tokens with Russian quotation marks and ellipses joined to the words they belong to."""
    out: List[str] = []
    glue_next = ""  # opening marks waiting for the word they open
    pending_low = 0  # „ opened and not yet closed: the next “ closes it
    for tok in tokens:
        if tok == "„" or tok == "«" or (tok == "“" and not pending_low):
            pending_low += tok == "„"
            glue_next += tok
            continue
        if tok in _CLOSING or tok == "“":
            if tok == "“":
                pending_low -= 1
            if out and not glue_next:
                out[-1] += tok
            else:
                glue_next += tok
            continue
        if tok in _ELLIPSIS:
            if out and not glue_next:
                out[-1] += tok
            else:  # a line's or quotation's first token: it goes with the word after it
                glue_next += tok
            continue
        out.append(glue_next + tok)
        glue_next = ""
    if glue_next:
        out.append(glue_next)
    return out


def _detokenizer():
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang="ru")


def detokenize_line(line: str, detokenizer=None) -> str:
    """One tokenized line as text (no line end)."""
    detokenizer = detokenizer or _detokenizer()
    return detokenizer.detokenize(join_marks(line.split()), unescape=False)


def _run(fn, workers: int):
    """fn over stdin's lines, in order, to stdout; `workers` processes."""
    for f in sys.stdin, sys.stdout:
        f.reconfigure(encoding="utf-8", newline="\n")
    lines = (line.rstrip("\n") for line in sys.stdin)
    if workers > 1:
        from multiprocessing import Pool

        with Pool(workers) as pool:
            for out in pool.imap(fn, lines, chunksize=256):
                sys.stdout.write(out + "\n")
    else:
        for line in lines:
            sys.stdout.write(fn(line) + "\n")


def _tokenize_one(aggressive: bool, line: str) -> str:
    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = _tokenizer()
    return tokenize_line(line, aggressive, _TOKENIZER)


def _detokenize_one(line: str) -> str:
    global _DETOKENIZER
    if _DETOKENIZER is None:
        _DETOKENIZER = _detokenizer()
    return detokenize_line(line, _DETOKENIZER)


_TOKENIZER = _DETOKENIZER = None  # one a process, made at its first line


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m mgsa_preprocess.moses_ru",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tokenize", help="raw Russian text -> Moses tokens (stdin -> stdout)")
    t.add_argument("-a", "--aggressive-dash-splits", action="store_true", help='"a-b" -> "a @-@ b"')
    t.add_argument("-j", "--workers", type=int, default=1, help="processes (default 1)")
    d = sub.add_parser("detokenize", help="Moses tokens -> Russian text (stdin -> stdout)")
    d.add_argument("-j", "--workers", type=int, default=1, help="processes (default 1)")
    a = p.parse_args(argv)
    if a.command == "tokenize":
        _run(partial(_tokenize_one, a.aggressive_dash_splits), a.workers)
    else:
        _run(_detokenize_one, a.workers)


if __name__ == "__main__":
    main()
