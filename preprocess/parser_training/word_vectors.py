"""Word vectors for mgsa-train-parser: learned from the user's own text with gensim, or random.

stanza's tagger and parser read fixed word vectors (a `Pretrain`, made from a word2vec text
file) beside the embeddings they fine-tune themselves. A treebank of a few thousand trees
leaves most words rare; vectors learned from a larger text of the same language (the NMT
corpus's source side: tens of thousands of sentences even for a small task) give the rare
and unseen words a place near the words they behave like.

The text is read as whitespace-separated tokens (tokenized as the corpus is, e.g. by Moses);
escapes are undone as mgsa-preprocess undoes them (preprocess/trees.py's `canonical_token`:
`&apos;` -> `'`, `-LRB-` -> `(`), so the vectors' words are the words the parser is given.
Words are lowercased: stanza's tagger looks its pretrained vectors up by the lowercased
word, its parser by the word and then the lowercased word, so lowercased vectors serve both.
The training trees' sentences are added to the text, so that every training word has a vector.
"""

import os
import random
import re
from collections import Counter

from ..errors import PreprocessError
from ..text_files import lines
from ..trees import canonical_token


def words_of(line: str):
    return [canonical_token(w).lower() for w in line.split()]


def check_text(path: str) -> None:
    """Fail before any training on a text that is missing, unreadable, damaged or has no word:
    read through once (a truncated .gz shows only at its end)."""
    words = False
    for _, line in lines(path, "the text for word vectors"):
        words = words or bool(line.split())
    if not words:
        raise PreprocessError("no word in this file (word vectors need a text, one sentence a line)", path)


_SPACES = re.compile(r"[ \t]+")  # as stanza's reader splits a line (some vector files use tabs)


def check_vectors(path: str) -> None:
    """Fail before any training on a --wordvec file that stanza's reader would stop on or misread:
    word2vec text format, an optional header "WORDS DIMENSION", then one word a line followed by as
    many numbers as the header (or the first line) says."""
    if not os.path.isfile(path):
        raise PreprocessError("word vector file not found", path)
    dim, rows = None, 0
    for n, line in lines(path, "the word vectors"):
        pieces = _SPACES.split(line.strip())
        if not pieces[0]:
            continue
        if dim is None and rows == 0 and len(pieces) == 2 and all(p.isdigit() for p in pieces):
            dim = int(pieces[1])  # the header
            continue
        if dim is None:
            dim = len(pieces) - 1
        numbers = pieces[-dim:] if dim and len(pieces) > dim else []
        try:
            [float(x) for x in numbers]
        except ValueError:
            numbers = []
        if not numbers:
            shown = line.strip()
            raise PreprocessError(f"expected a word and {dim} numbers (word2vec text format), got "
                                  f"{shown[:60]!r}{'...' if len(shown) > 60 else ''}", path, n)
        rows += 1
    if not rows:
        raise PreprocessError("no word vector in this file (word2vec text format expected)", path)


class _Sentences:
    """The text's sentences, then the training trees', as lists of words; iterable many times
    (gensim makes one pass to build the vocabulary and one per epoch)."""

    def __init__(self, path: str, extra):
        self.path, self.extra = path, extra

    def __iter__(self):
        for _, line in lines(self.path, "the text for word vectors"):
            words = words_of(line)
            if words:
                yield words
        for words in self.extra:
            yield [w.lower() for w in words]


def train_word2vec(text: str, tree_words, out_txt: str, dim: int, epochs: int, seed: int, threads: int = 1) -> dict:
    """gensim's word2vec (skip-gram, every word kept) on `text` plus the training trees' words
    (`tree_words`: lists of words), written in word2vec text format. Returns figures for the record."""
    from gensim.models import Word2Vec

    sentences = _Sentences(text, tree_words)
    # min_count=1: the rare words are the ones the treebank alone cannot teach; skip-gram
    # learns them better than CBOW from few occurrences
    model = Word2Vec(vector_size=dim, window=5, min_count=1, sg=1, workers=threads, seed=seed)
    model.build_vocab(sentences)
    model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
    model.wv.save_word2vec_format(out_txt)
    return {"text": os.path.abspath(text), "sentences": model.corpus_count, "words": model.corpus_total_words,
            "vocab": len(model.wv), "dim": dim, "epochs": epochs, "method": "gensim word2vec skip-gram, window 5"}


def random_vectors(tree_words, out_txt: str, dim: int, seed: int) -> None:
    """Random vectors over the training words (lowercased, as stanza looks them up): the tagger
    and parser fine-tune their own embeddings on top, these only need to cover the vocabulary."""
    counts = Counter(w.lower() for words in tree_words for w in words)
    rng = random.Random(seed)
    with open(out_txt, "w", encoding="utf-8") as f:
        f.write(f"{len(counts)} {dim}\n")
        for w, _ in counts.most_common():
            f.write(w + " " + " ".join(f"{rng.gauss(0, 0.1):.4f}" for _ in range(dim)) + "\n")


def write_pretrain(vectors_txt: str, out_pt: str) -> int:
    """stanza's pretrain file from a word2vec text file (optionally .xz/.gz); its vocabulary size."""
    from stanza.models.common.pretrain import Pretrain

    if not os.path.isfile(vectors_txt):
        raise PreprocessError("word vector file not found", vectors_txt)
    if os.path.exists(out_pt):
        os.remove(out_pt)
    pretrain = Pretrain(out_pt, vectors_txt, max_vocab=-1)
    pretrain.load()  # reads the text file, writes the .pt
    return len(pretrain.vocab)
