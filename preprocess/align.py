"""Words <-> subword pieces of a segmented source line.

A line is split into pieces exactly as fairseq's tokenizer splits it
(``str.split()``: runs of any whitespace), so the pieces here are the tokens of
the fairseq binaries, minus the end-of-sentence token. Word boundaries come from
the segmentation's markers:

* ``bpe``: subword-nmt, a piece ending in the separator (``@@``) continues into
  the next piece;
* ``sentencepiece``: a piece starting with U+2581 (``▁``) starts a word (so does
  the first piece);
* ``none``: every piece is a word.
"""

from typing import List, Optional, Sequence, Tuple

SPM_SPACE = "\u2581"
STYLES = ("bpe", "sentencepiece", "none")


def split_words(line: str, style: str = "bpe", separator: str = "@@") -> Tuple[List[str], Optional[List[int]]]:
    """``(words, pieces per word)`` of a segmented line; counts are None when every word is one piece.

    Raises ValueError for a bpe line whose last piece still carries the separator.
    """
    pieces = line.split()
    if style == "none" or (style == "bpe" and separator not in line):
        return pieces, None
    words: List[str] = []
    counts: List[int] = []
    if style == "bpe":
        cut = len(separator)
        current: List[str] = []
        for p in pieces:
            if p.endswith(separator):
                current.append(p[:-cut])
            elif current:
                current.append(p)
                words.append("".join(current))
                counts.append(len(current))
                current = []
            else:
                words.append(p)
                counts.append(1)
        if current:
            raise ValueError(f"the last piece {pieces[-1]!r} ends with the BPE separator {separator!r}")
        return words, counts
    if style == "sentencepiece":
        for i, p in enumerate(pieces):
            if i == 0 or p.startswith(SPM_SPACE):
                words.append(p.lstrip(SPM_SPACE))
                counts.append(1)
            else:
                words[-1] += p
                counts[-1] += 1
        return words, counts
    raise ValueError(f"unknown subword style {style!r} (expected one of {STYLES})")


def cumulative(counts: Sequence[int]) -> List[int]:
    """Subword offset of each word boundary: ``cum[i]`` pieces precede word i."""
    cum = [0]
    total = 0
    for c in counts:
        total += c
        cum.append(total)
    return cum


def subword_lengths(nodes, cum: Optional[List[int]]) -> List[int]:
    """Subword length of each phrase (node ``(tag, start, end, children)``) given word offsets."""
    if cum is None:
        return [n[2] - n[1] for n in nodes]
    return [cum[n[2]] - cum[n[1]] for n in nodes]
