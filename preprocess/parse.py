"""Constituency parsing with stanza (``--parser stanza``), sharded over machines, and the merge.

The parser sees the source's words (pretokenized, one sentence per line, escapes
undone: ``&amp;`` -> ``&``; a Chinese source's words as they are, see ``undoes_escapes``) and
writes one bracketed tree per line, the file the rest of the pipeline reads exactly as it reads
``--trees-suffix`` files.

Sharding: ``--num-shards N --shard-id i`` parses only the i-th of N contiguous
line ranges of every split into ``{destdir}/trees/shards/`` (for example one
SLURM array task per shard), with a small JSON record of the range. The same
command without ``--shard-id`` then merges the N shards (checking that every
shard is there, covers its range and holds one tree per line) and goes on to
binarize.
"""

import json
import os
from typing import Iterator, List, Optional, Tuple

from .align import split_words
from .errors import PreprocessError
from .stanza_model import is_model_dir, load_pipeline, read_record
from .trees import canonical_token

EMPTY_TREE = "()"  # written for an empty line under --lenient; the parser never sees it


def shard_range(n_lines: int, num_shards: int, shard_id: int) -> Tuple[int, int]:
    """0-based ``[start, end)`` line range of a shard; shards differ in size by at most one line."""
    if not 0 <= shard_id < num_shards:
        raise PreprocessError(f"--shard-id {shard_id} is not in [0, --num-shards {num_shards})")
    return n_lines * shard_id // num_shards, n_lines * (shard_id + 1) // num_shards


def tree_path(destdir: str, split: str, lang: str) -> str:
    return os.path.join(destdir, "trees", f"{split}.{lang}.tree")


def shard_paths(destdir: str, split: str, lang: str, shard_id: int, num_shards: int) -> Tuple[str, str]:
    base = os.path.join(destdir, "trees", "shards", f"{split}.{lang}.tree.{shard_id:04d}-of-{num_shards:04d}")
    return base, base + ".json"


class StanzaParser:
    """A stanza pipeline (tokenize, pos, constituency) over pretokenized sentences: stanza's own
    models for `lang` (in `model_dir`, or stanza's default directory), or the parser that
    mgsa-train-parser wrote into `model_dir` (see preprocess/stanza_model.py)."""

    def __init__(self, lang: str, device: str = "auto", download: str = "reuse", model_dir: Optional[str] = None,
                 batch_size: int = 256, threads: Optional[int] = 1):
        # torch threads while parsing on CPU; None: torch's setting (one per core). One thread a
        # process is the default because stanza's many small operations gain little from a second
        # thread and lose much when the cores are busy: 58.5 vs 3.6 sentences/s on a shared
        # 2-core machine (docs/benchmarks-parser.md); use more processes (--num-shards) instead.
        self.threads = threads
        if device == "auto":
            import torch
            use_gpu = torch.cuda.is_available()
        else:
            use_gpu = device == "cuda"
        self.device = "cuda" if use_gpu else "cpu"
        # what mgsa-train-parser warned of when it trained the model (a cap cut its training
        # while its dev score still rose): the caller repeats it
        self.warnings = []
        if is_model_dir(model_dir):  # mgsa-train-parser's: offline, whatever `download` says
            self.pipeline = load_pipeline(model_dir, use_gpu=use_gpu, batch_size=batch_size)
            self.warnings = list(read_record(model_dir).get("warnings") or [])
            return
        import stanza

        methods = {"none": stanza.DownloadMethod.NONE, "reuse": stanza.DownloadMethod.REUSE_RESOURCES,
                   "download": stanza.DownloadMethod.DOWNLOAD_RESOURCES}
        kwargs = dict(processors="tokenize,pos,constituency", tokenize_pretokenized=True, use_gpu=use_gpu,
                      download_method=methods[download], pos_batch_size=batch_size,
                      constituency_batch_size=batch_size, logging_level="WARN")
        if model_dir:
            kwargs["dir"] = model_dir
        try:
            self.pipeline = stanza.Pipeline(lang, **kwargs)
        except Exception as e:  # missing models, no network, unknown language: all end here
            raise PreprocessError(
                f"cannot load the stanza pipeline for language {lang!r} (tokenize,pos,constituency): "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} -- on a machine with network "
                f"access run with --stanza-download reuse (the default) once, or stanza.download({lang!r}), "
                f"and point --stanza-dir at the models, or at a parser trained by mgsa-train-parser") from None

    def parse(self, sentences: List[List[str]]) -> List[str]:
        """One-line bracketed tree per sentence, in order."""
        import torch

        saved = torch.get_num_threads()
        if self.threads and self.device == "cpu":  # set around the call only: the process's other work keeps its own
            torch.set_num_threads(self.threads)
        try:
            doc = self.pipeline(sentences)
        finally:
            torch.set_num_threads(saved)
        if len(doc.sentences) != len(sentences):
            raise PreprocessError(f"stanza returned {len(doc.sentences)} parses for {len(sentences)} sentences")
        # stanza's one-line format escapes brackets inside leaves as -LRB-/-RRB-
        return ["{}".format(s.constituency) for s in doc.sentences]


# languages whose text no Moses tokenizer or Penn Treebank writer has escaped (mgsa-segment-zh
# writes no escapes): a token such as ` or &amp; is the text itself, not an escape to undo
NO_ESCAPES = ("zh", "cmn", "yue", "wuu", "lzh")


def undoes_escapes(lang: Optional[str]) -> bool:
    """Whether the parser of `lang` (zh, zh-hans, zh_CN, ...) is given words with Moses' and the PTB's
    escapes undone: not for Chinese, whose quotes and ampersands are never escaped."""
    return (lang or "").replace("_", "-").split("-")[0].lower() not in NO_ESCAPES


def read_words(src_path: str, style: str, separator: str, start: int = 0,
               end: Optional[int] = None, unescape: bool = True) -> Iterator[Tuple[int, List[str]]]:
    """``(line number, words)`` for lines ``[start, end)`` (0-based) of the source, with escapes
    undone (``unescape``) or as they are."""
    with open(src_path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i < start:
                continue
            if end is not None and i >= end:
                break
            try:
                words, _ = split_words(line, style, separator)
            except ValueError as e:
                raise PreprocessError(str(e), src_path, i + 1) from None
            yield i + 1, [canonical_token(w) for w in words] if unescape else words


def parse_lines(parser, src_path: str, out_path: str, style: str = "bpe", separator: str = "@@",
                start: int = 0, end: Optional[int] = None, lenient: bool = False, batch: int = 1000,
                progress: bool = True, desc: str = "parse", unescape: bool = True) -> int:
    """Parse source lines ``[start, end)`` into ``out_path``, one tree per line; return the count.

    An empty line stops the run before any parsing (it has no tree) unless
    ``lenient``, where it gets the empty tree ``()`` and is counted as repaired later.
    """
    from .progress import bar as progress_bar

    total = 0
    for lineno, words in read_words(src_path, style, separator, start, end, unescape):
        if not words and not lenient:
            raise PreprocessError("empty line: there is nothing to parse (--lenient gives it an empty "
                                  "partition)", src_path, lineno)
        total += 1
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    written = 0
    with progress_bar(total=total, desc=desc, unit="sent", disable=not progress) as bar, \
            open(out_path + ".partial", "w", encoding="utf-8") as out:
        batch_words: List[List[str]] = []

        def flush():
            nonlocal written
            nonempty = [w for w in batch_words if w]
            trees = iter(parser.parse(nonempty) if nonempty else [])
            out.writelines(f"{next(trees) if w else EMPTY_TREE}\n" for w in batch_words)
            written += len(batch_words)
            bar.update(len(batch_words))
            batch_words.clear()

        for _, words in read_words(src_path, style, separator, start, end, unescape):
            batch_words.append(words)
            if len(batch_words) == batch:
                flush()
        if batch_words:
            flush()
    os.replace(out_path + ".partial", out_path)
    return written


def parse_shard(parser, src_path: str, destdir: str, split: str, lang: str, shard_id: int, num_shards: int,
                **kwargs) -> Tuple[str, int]:
    """Parse one shard of a split; write its trees and its JSON record. Returns (tree file, trees)."""
    n_lines = sum(1 for _ in open(src_path, encoding="utf-8"))
    start, end = shard_range(n_lines, num_shards, shard_id)
    path, meta = shard_paths(destdir, split, lang, shard_id, num_shards)
    n = parse_lines(parser, src_path, path, start=start, end=end,
                    desc=f"parse {split} shard {shard_id}/{num_shards}", **kwargs)
    with open(meta, "w") as f:
        json.dump({"source": os.path.abspath(src_path), "source_lines": n_lines, "start": start, "end": end,
                   "shard_id": shard_id, "num_shards": num_shards, "trees": n}, f)
    return path, n


def merge_shards(src_path: str, destdir: str, split: str, lang: str, num_shards: int) -> str:
    """Concatenate the shards of a split into its tree file, after checking each covers its lines."""
    from .binarize import count_trees

    n_lines = sum(1 for _ in open(src_path, encoding="utf-8"))
    parts = [shard_paths(destdir, split, lang, i, num_shards) for i in range(num_shards)]
    missing = [i for i, (path, meta) in enumerate(parts) if not (os.path.exists(path) and os.path.exists(meta))]
    if missing:
        raise PreprocessError(f"{len(missing)} of {num_shards} parse shards of {split} are missing "
                              f"(shard ids {', '.join(map(str, missing[:20]))}{' ...' if len(missing) > 20 else ''}): "
                              f"run with --shard-id for each first",
                              os.path.dirname(parts[0][0]))
    for i, (path, meta) in enumerate(parts):
        with open(meta) as f:
            record = json.load(f)
        start, end = shard_range(n_lines, num_shards, i)
        if (record["source_lines"], record["start"], record["end"]) != (n_lines, start, end):
            raise PreprocessError(f"shard {i} was parsed from {record['source']} with {record['source_lines']} "
                                  f"lines, lines {record['start'] + 1}-{record['end']}, but {src_path} now has "
                                  f"{n_lines} lines (shard {i} = lines {start + 1}-{end}): parse it again", meta)
        n = count_trees(path)
        if n != end - start:
            raise PreprocessError(f"shard {i} holds {n} trees for {end - start} lines", path)
    out = tree_path(destdir, split, lang)
    with open(out + ".partial", "w", encoding="utf-8") as f:
        for path, _ in parts:
            with open(path, encoding="utf-8") as part:
                for line in part:
                    f.write(line)
    os.replace(out + ".partial", out)
    return out
