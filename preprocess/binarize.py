"""Writing the phrase files and the tag dictionary (their format: phrase_files.py).

The CPU work (tree reading, normalisation, partition, alignment) runs on chunks
of sentences, in worker processes with ``--workers``; the main process reads the
files, writes the results in order and owns the tag dictionary.
"""

import os
from collections import Counter, deque
from dataclasses import dataclass
from functools import partial
from multiprocessing import Pool
from typing import Callable, Iterable, Iterator, List, Optional

import numpy as np

from .fairseq_import import import_fairseq

import_fairseq()  # without the logging set-up of fairseq's import (fairseq_import.py)
from fairseq.data import Dictionary  # noqa: E402
from fairseq.data.indexed_dataset import MMapIndexedDataset, data_file_path, index_file_path  # noqa: E402

from .align import cumulative, split_words, subword_lengths
from .errors import BadTree, PreprocessError
from .partition import UNKNOWN_TAG, flat_partition, partition
from .phrase_files import ITEM_DTYPE, build_tag_dictionary, encode_items, item_layout, phrase_prefix
from .report import MAX_EXAMPLES, SplitReport
from .trees import TreeStats, check_leaves, iter_tree_texts, parse_tree

CHUNK_SIZE = 2000  # sentences per task: large enough to amortise pickling, small for smooth progress


@dataclass(frozen=True)
class PhraseJob:
    """What a worker needs to turn (source line, tree) pairs into phrases."""
    src_path: str  # the segmented source text, as fairseq binarizes it
    tree_path: str
    levels: int = 3
    style: str = "bpe"
    separator: str = "@@"
    lenient: bool = False
    # Errors name the user's files, never one this tool wrote: text_path is the
    # user's source when src_path is its segmentation (--bpe-codes; same lines),
    # parsed says the trees are the parser's (--parser), so a tree error is
    # reported at the source line it was parsed from.
    text_path: Optional[str] = None
    parsed: bool = False

    @property
    def src_name(self) -> str:
        return self.text_path or self.src_path


def _user_tree_error(job: PhraseJob, e: BadTree, src_no: int) -> BadTree:
    """A tree error located in the user's files: as is for a tree file the user gave,
    else at the source line (the tree file is the parser's output)."""
    if not job.parsed:
        return e
    return BadTree(f"the parser's tree for this line is unusable: {e.message}", job.src_name, src_no,
                   reason=e.reason)


def process_chunk(job: PhraseJob, chunk) -> dict:
    """Phrases of a chunk of ``(source line no., source line, tree line no., tree text)``.

    Tags come back as indices into the chunk's own ``tags`` list (the main
    process maps them to the dictionary), so the result pickles as a few arrays.
    """
    k_levels = job.levels
    tag_ids = {}
    n_phrases = [[] for _ in range(k_levels)]
    lens = [[] for _ in range(k_levels)]
    tags = [[] for _ in range(k_levels)]
    ntok = []
    stats = TreeStats()
    escaped = words_total = 0
    repaired = Counter()
    examples = []
    for src_no, src_line, tree_no, tree_text in chunk:
        try:
            words, counts = split_words(src_line, job.style, job.separator)
        except ValueError as e:
            raise PreprocessError(str(e), job.src_name, src_no) from None
        try:
            if not words:
                raise BadTree("empty line" + ("" if job.parsed else f" (its tree is {job.tree_path}:{tree_no})"),
                              job.src_name, src_no, reason="empty line")
            try:
                top, leaves = parse_tree(tree_text, job.tree_path, tree_no, stats)
                escaped += check_leaves(leaves, words, job.tree_path, tree_no, job.src_name, src_no)
            except BadTree as e:
                raise _user_tree_error(job, e, src_no) from None
            levels = partition(top, k_levels)
        except BadTree as e:
            if not job.lenient:
                raise
            repaired[e.reason] += 1
            if len(examples) < MAX_EXAMPLES:
                examples.append(str(e))
            levels = flat_partition(len(words), k_levels)
        cum = None if counts is None else cumulative(counts)
        ntok.append(len(words) if cum is None else cum[-1])
        words_total += len(words)
        for k in range(k_levels):
            nodes = levels[k]
            n_phrases[k].append(len(nodes))
            lens[k].extend(subword_lengths(nodes, cum))
            tags[k].extend([tag_ids.setdefault(n[0], len(tag_ids)) for n in nodes])
    normalisation = stats.as_dict()
    normalisation["leaves_matched_through_escapes"] = escaped
    return {
        "n_phrases": [np.asarray(m, dtype=np.int64) for m in n_phrases],
        "lens": [np.asarray(x, dtype=ITEM_DTYPE) for x in lens],
        "tags": [np.asarray(x, dtype=ITEM_DTYPE) for x in tags],
        "tag_names": list(tag_ids),
        "ntok": np.asarray(ntok, dtype=np.int64),
        "stats": {"sentences": len(chunk), "words": words_total, "subwords": int(sum(ntok)),
                  "phrases": [len(x) for x in lens], "normalisation": normalisation,
                  "repaired": dict(repaired), "repaired_examples": examples},
    }


def ordered_map(fn: Callable, tasks: Iterable, workers: int, window: int = 4,
                initializer: Optional[Callable] = None) -> Iterator:
    """``fn`` over ``tasks`` in ``workers`` processes, results in task order.

    Unlike ``Pool.imap``, which drains its input iterator as fast as it can (the
    whole corpus would sit in memory), at most ``window`` tasks per worker are
    in flight. An exception in a worker is re-raised here, at its task.
    """
    if workers <= 1:
        for t in tasks:
            yield fn(t)
        return
    with Pool(workers, initializer=initializer) as pool:
        pending = deque()
        for t in tasks:
            pending.append(pool.apply_async(fn, (t,)))
            if len(pending) >= workers * window:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


class PhraseFileWriter:
    """One level's phrase file, a fairseq mmap indexed dataset (phrase_files.py).

    Bytes are written a chunk at a time and the index by fairseq's own
    ``MMapIndexedDataset.Index.writer``, so the format is fairseq's while the
    per-sentence cost of ``MMapIndexedDatasetBuilder.add_item`` (a tensor round
    trip per item) is avoided. Files go to ``*.partial.{bin,idx}`` until
    ``commit``, so a failed run leaves no phrase file that looks complete.
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.partial = prefix + ".partial"
        self._bin = open(data_file_path(self.partial), "wb")
        self._sizes: List[np.ndarray] = []

    def add_chunk(self, n_phrases: np.ndarray, lens: np.ndarray, tags: np.ndarray):
        self._bin.write(encode_items(n_phrases, lens, tags).tobytes())
        self._sizes.append(2 * n_phrases)

    def finalize(self) -> np.ndarray:
        self._bin.close()
        sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, dtype=np.int64)
        with MMapIndexedDataset.Index.writer(index_file_path(self.partial), ITEM_DTYPE) as index:
            index.write(sizes)
        return sizes

    def commit(self):
        for path in (data_file_path, index_file_path):
            os.replace(path(self.partial), path(self.prefix))

    def discard(self):
        if not self._bin.closed:
            self._bin.close()
        for path in (data_file_path(self.partial), index_file_path(self.partial)):
            if os.path.exists(path):
                os.remove(path)


def remap_tags(partial_prefix: str, sizes: np.ndarray, lut: np.ndarray, block: int = 1 << 20):
    """Rewrite the tag half of every item through ``lut`` (provisional -> final tag index)."""
    data = np.memmap(data_file_path(partial_prefix), dtype=ITEM_DTYPE, mode="r+")
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for b in range(0, len(sizes), block):
        m = sizes[b:b + block] // 2  # phrases of each item of the block
        seg = data[offsets[b]:offsets[b + len(m)]]
        _, tags_at = item_layout(m)
        seg[tags_at] = lut[seg[tags_at]]
    data.flush()
    del data


class TagTable:
    """Maps each chunk's tag names to indices.

    With a fixed dictionary (``--tagdict``, or the train dictionary for valid and
    test) unseen tags map to ``<unk>`` and are counted. Without one (the train
    split) tags get provisional indices in order of appearance; ``finish_train``
    then builds the dictionary sorted by frequency and gives the remapping.
    """

    def __init__(self, dictionary: Optional[Dictionary] = None):
        self.dictionary = dictionary
        self.provisional = {}

    def lookup(self, names: List[str], counts: np.ndarray, report: SplitReport) -> np.ndarray:
        for name, c in zip(names, counts.tolist()):
            if c:
                report.tag_counts[name] += c
        if self.dictionary is None:
            return np.array([self.provisional.setdefault(n, len(self.provisional)) for n in names], dtype=ITEM_DTYPE)
        d = self.dictionary
        lut = np.array([d.index(n) for n in names], dtype=ITEM_DTYPE)
        for name, idx, c in zip(names, lut.tolist(), counts.tolist()):
            if idx == d.unk_index and name != UNKNOWN_TAG and c:
                report.unseen_tags[name] += c
        return lut

    def finish_train(self, report: SplitReport) -> np.ndarray:
        """Build the dictionary from the train counts; return provisional -> final indices."""
        self.dictionary = d = build_tag_dictionary(report.tag_counts)
        lut = np.zeros(max(len(self.provisional), 1), dtype=ITEM_DTYPE)
        for name, i in self.provisional.items():
            lut[i] = d.index(name)
        return lut


def count_lines(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def count_trees(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in iter_tree_texts(f, path))


def read_pairs(job: PhraseJob, chunk_size: int = CHUNK_SIZE) -> Iterator[list]:
    """Chunks of ``(source line no., line, tree line no., tree text)``, pairing line i with tree i."""
    with open(job.src_path, encoding="utf-8") as fs, open(job.tree_path, encoding="utf-8") as ft:
        trees = iter_tree_texts(ft, job.tree_path)
        chunk = []
        n = 0
        for n, line in enumerate(fs, 1):
            tree = next(trees, None)
            if tree is None:
                raise PreprocessError(f"no tree for this line: {job.tree_path} has only {n - 1} trees",
                                      job.src_name, n)
            chunk.append((n, line, tree[0], tree[1]))
            if len(chunk) == chunk_size:
                yield chunk
                chunk = []
        extra = next(trees, None)
        if extra is not None:
            raise PreprocessError(f"tree {n + 1} has no line: {job.src_name} has only {n} lines",
                                  job.tree_path, extra[0])
        if chunk:
            yield chunk


def check_counts(job: PhraseJob) -> int:
    """Number of sentences; an error naming file and line when trees and lines differ in number.

    A count mismatch usually comes from a tree missing or added somewhere in the
    middle, so the error also names the first tree whose leaves stop matching
    its line, which is where to look.
    """
    n_lines, n_trees = count_lines(job.src_path), count_trees(job.tree_path)
    if n_lines == n_trees:
        return n_lines
    first_bad = None
    for src_no, line, tree_no, text in _pairs_up_to(job, min(n_lines, n_trees)):
        try:
            words, _ = split_words(line, job.style, job.separator)
        except ValueError as e:
            raise PreprocessError(str(e), job.src_name, src_no) from None
        try:
            _, leaves = parse_tree(text, job.tree_path, tree_no)
            check_leaves(leaves, words, job.tree_path, tree_no, job.src_name, src_no)
        except BadTree as e:
            first_bad = _user_tree_error(job, e, src_no)
            break
    msg = f"{job.tree_path} has {n_trees} trees but {job.src_name} has {n_lines} lines"
    if first_bad is not None:
        raise PreprocessError(f"{msg}; the first tree that does not match its line: {first_bad.message}",
                              first_bad.path, first_bad.line)
    if n_trees > n_lines:
        raise PreprocessError(f"{msg}: this tree and the ones after it have no line", job.tree_path,
                              _tree_line(job.tree_path, n_lines + 1))
    raise PreprocessError(f"{msg}: this line and the ones after it have no tree", job.src_name, n_trees + 1)


def _pairs_up_to(job: PhraseJob, n: int):
    with open(job.src_path, encoding="utf-8") as fs, open(job.tree_path, encoding="utf-8") as ft:
        for i, line, tree in zip(range(1, n + 1), fs, iter_tree_texts(ft, job.tree_path)):
            yield i, line, tree[0], tree[1]


def _tree_line(path: str, n: int) -> int:
    """The line on which the n-th tree (1-based) of a tree file starts."""
    with open(path, encoding="utf-8") as f:
        for i, (line, _) in enumerate(iter_tree_texts(f, path), 1):
            if i == n:
                return line
    raise ValueError(f"{path} has fewer than {n} trees")


def write_split(job: PhraseJob, out_prefix: Optional[str], report: SplitReport, tags: TagTable,
                workers: int = 1, progress: bool = True, is_train: bool = False,
                chunk_size: int = CHUNK_SIZE) -> dict:
    """Write the phrase files of one split (as ``*.partial``); return what ``commit_split`` needs.

    With ``out_prefix`` None nothing is written: the trees are checked and the
    tags counted (``--dict-only`` builds the tag dictionary this way).
    On any error the partial files are removed and the error propagates.
    """
    from .progress import bar as progress_bar

    total = check_counts(job)
    levels = 0 if out_prefix is None else job.levels
    writers = [PhraseFileWriter(phrase_prefix(out_prefix, k + 1)) for k in range(levels)]
    ntok = []
    try:
        with progress_bar(total=total, desc=f"phrases {report.name}", unit="sent", disable=not progress) as bar:
            for res in ordered_map(partial(process_chunk, job), read_pairs(job, chunk_size), workers):
                all_tags = np.concatenate(res["tags"])
                lut = tags.lookup(res["tag_names"], np.bincount(all_tags, minlength=len(res["tag_names"])), report)
                for k, w in enumerate(writers):
                    w.add_chunk(res["n_phrases"][k], res["lens"][k], lut[res["tags"][k]])
                report.add_chunk(res["stats"])
                ntok.append(res["ntok"])
                bar.update(res["stats"]["sentences"])
        if not sum(report.phrases):
            # fairseq cannot open an indexed dataset whose data file is empty (np.memmap refuses it)
            raise PreprocessError(f"no phrase at all in this split ({report.sentences} sentences, all empty?)",
                                  job.src_name)
        sizes = [w.finalize() for w in writers]
        if is_train and tags.dictionary is None:
            lut = tags.finish_train(report)
            for w, s in zip(writers, sizes):
                remap_tags(w.partial, s, lut)
    except BaseException:
        for w in writers:
            w.discard()
        raise
    return {"writers": writers, "ntok": np.concatenate(ntok) if ntok else np.zeros(0, dtype=np.int64),
            "src_path": job.src_name}


def verify_token_counts(token_prefix: str, written: dict):
    """The phrase lengths of every line must sum to fairseq's token count minus EOS."""
    # Keep the Index alive while copying: its sizes are a view of an mmap it closes on deletion.
    index = MMapIndexedDataset.Index(index_file_path(token_prefix))
    sizes = index.sizes.astype(np.int64) - 1
    del index
    ntok = written["ntok"]
    if len(sizes) != len(ntok):
        raise PreprocessError(f"fairseq-preprocess binarized {len(sizes)} lines of this file but the phrases were "
                              f"written for {len(ntok)} (a line break the two readers split differently?)",
                              written["src_path"])
    bad = np.flatnonzero(sizes != ntok)
    if len(bad):
        i = int(bad[0])
        raise PreprocessError(f"fairseq binarized {sizes[i]} tokens for this line but the phrases cover {ntok[i]} "
                              "(a line break or whitespace the two readers split differently?)",
                              written["src_path"], i + 1)


def commit_split(written: dict):
    for w in written["writers"]:
        w.commit()


def discard_split(written: dict):
    for w in written["writers"]:
        w.discard()
