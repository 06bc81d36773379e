"""Word alignment files (fairseq-preprocess's ``--align-suffix`` and ``--alignfile``).

fairseq reads them as one line per sentence pair of ``i-j`` pairs: source token i
is aligned to target token j, 0-based (fast_align's output format). fairseq
binarizes ``{pref}.{align_suffix}`` as ``{destdir}/{split}.align.{src}-{tgt}``
and builds ``alignment.{src}-{tgt}.txt`` from ``--alignfile``.

With ``--bpe-codes`` fairseq binarizes the segmented text, so the user's word
indices would point at the wrong tokens. They are mapped to subword indices the
way fast_align users with BPE do: every piece of source word i is aligned to
every piece of target word j. Without ``--bpe-codes`` the indices count the
tokens of the text as given and the file is binarized as is. Either way the
file is checked first (format, one line per sentence pair, indices in range),
since fairseq would only fail on it after the binarization, or never.
"""

import os
import re
from dataclasses import dataclass
from functools import partial
from itertools import zip_longest
from typing import List, Optional, Tuple

from .align import cumulative, split_words
from .errors import PreprocessError

PAIR = re.compile(r"([0-9]+)-([0-9]+)")
CHUNK_SIZE = 2000


@dataclass(frozen=True)
class AlignJob:
    align_path: str  # the user's alignment file
    src_path: str  # the user's text: the indices count its whitespace-separated tokens
    tgt_path: str
    src_seg: Optional[str] = None  # with --bpe-codes: the segmented text fairseq binarizes
    tgt_seg: Optional[str] = None
    separator: str = "@@"


def read_pairs(line: str, path: str, lineno: int) -> List[Tuple[int, int]]:
    pairs = []
    for tok in line.split():
        m = PAIR.fullmatch(tok)
        if m is None:
            raise PreprocessError(f"expected alignment pairs i-j (source word i, target word j, from 0), got {tok!r}",
                                  path, lineno)
        pairs.append((int(m[1]), int(m[2])))
    return pairs


def _word_offsets(seg_line: str, n_words: int, job: AlignJob, seg_path: str, lineno: int) -> List[int]:
    """``cum[i]``: the pieces before word i of the segmented line (``cum[n_words]`` in all)."""
    words, counts = split_words(seg_line, "bpe", job.separator)
    if len(words) != n_words:  # the segmentation is this tool's own: a bug, not the user's input
        raise PreprocessError(f"the segmentation has {len(words)} words but the text has {n_words}", seg_path, lineno)
    return cumulative(counts or [1] * n_words)


def map_chunk(job: AlignJob, chunk) -> Tuple[List[str], int, int]:
    """Check a chunk of ``(line no., alignment, source, target, source pieces, target pieces)``.

    Returns the subword alignment lines (with segmented text; else none), the
    word links and the subword links.
    """
    out, words, pieces = [], 0, 0
    for no, a, s, t, s_seg, t_seg in chunk:
        pairs = read_pairs(a, job.align_path, no)
        ns, nt = len(s.split()), len(t.split())
        for i, j in pairs:
            if i >= ns or j >= nt:
                raise PreprocessError(f"the pair {i}-{j} is out of range: {job.src_path}:{no} has {ns} words and "
                                      f"{job.tgt_path}:{no} has {nt} (indices start at 0)", job.align_path, no)
        words += len(pairs)
        if s_seg is None:
            continue
        cs = _word_offsets(s_seg, ns, job, job.src_seg, no)
        ct = _word_offsets(t_seg, nt, job, job.tgt_seg, no)
        links = [f"{p}-{q}" for i, j in pairs for p in range(cs[i], cs[i + 1]) for q in range(ct[j], ct[j + 1])]
        pieces += len(links)
        out.append(" ".join(links) + "\n")
    return out, words, pieces


def _open(path: Optional[str]):
    return open(path, encoding="utf-8") if path else None


def read_chunks(job: AlignJob, chunk_size: int = CHUNK_SIZE):
    """Chunks of aligned lines; an error naming the file whose line count differs."""
    paths = [job.align_path, job.src_path, job.tgt_path, job.src_seg, job.tgt_seg]
    files = [_open(p) for p in paths]
    try:
        streams = [f if f is not None else iter(()) for f in files]
        chunk, n = [], 0
        for n, (a, s, t, s_seg, t_seg) in enumerate(zip_longest(*streams), 1):
            if a is None:
                raise PreprocessError(f"has {n - 1} lines but {job.src_path} has more: every sentence pair needs "
                                      "a line (an empty one for no links)", job.align_path)
            for text, path in ((s, job.src_path), (t, job.tgt_path)):
                if text is None:
                    raise PreprocessError(f"this line has no sentence pair: {path} has only {n - 1} lines",
                                          job.align_path, n)
            chunk.append((n, a, s, t, s_seg, t_seg))
            if len(chunk) == chunk_size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk
    finally:
        for f in files:
            if f is not None:
                f.close()


def convert(job: AlignJob, out_path: Optional[str] = None, workers: int = 1, progress: bool = True,
            desc: str = "alignments") -> dict:
    """Check ``job.align_path``; with segmented text also write its subword alignment to ``out_path``."""
    from .binarize import ordered_map
    from .progress import bar as progress_bar

    mapping = job.src_seg is not None
    assert mapping == (out_path is not None)
    lines = words = pieces = 0
    out = open(out_path + ".partial", "w", encoding="utf-8") if mapping else None
    try:
        with progress_bar(desc=desc, unit="line", disable=not progress) as bar:
            for res, n in ordered_map(partial(_map_counted, job), read_chunks(job), workers):
                if out is not None:
                    out.writelines(res[0])
                words += res[1]
                pieces += res[2]
                lines += n
                bar.update(n)
    except BaseException:
        if out is not None:
            out.close()
            os.remove(out_path + ".partial")
        raise
    if out is not None:
        out.close()
        os.replace(out_path + ".partial", out_path)
    return {"file": job.align_path, "lines": lines, "word_links": words,
            "subword_links": pieces if mapping else None}


def _map_counted(job: AlignJob, chunk):
    return map_chunk(job, chunk), len(chunk)


def binarize(path: str, split: str, args) -> str:
    """``{destdir}/{split}.align.{src}-{tgt}.bin/.idx`` by fairseq's own alignment binarizer; returns the prefix.

    Called per split rather than through fairseq-preprocess's ``--align-suffix``
    loop, which looks for ``{validpref}.{suffix}`` with the comma-separated list
    as one prefix and so skips valid1, test1, ... without a word.
    """
    from fairseq_cli import preprocess as fairseq_preprocess

    fairseq_preprocess._make_binary_alignment_dataset(path, f"{split}.align", args.workers, args)
    return fairseq_preprocess.dataset_dest_prefix(args, f"{split}.align", None)
