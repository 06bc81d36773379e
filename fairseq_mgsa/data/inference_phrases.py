"""Phrases for sentences that arrive at decoding time (fairseq-interactive).

Each input line is either plain text, parsed with stanza (the same pipeline as
`mgsa-preprocess --parser stanza`), or one bracketed tree (pre-parsed input). The
words are segmented with the BPE fairseq-interactive was given (--bpe), and the
tree's top levels are aligned to the subwords exactly as mgsa-preprocess does it:
the same tree normalisation, partition and alignment code is used.
"""

from typing import Callable, List, Optional, Tuple

import torch

from preprocess.align import cumulative, split_words, subword_lengths
from preprocess.errors import PreprocessError
from preprocess.partition import partition
from preprocess.trees import canonical_token, check_leaves, parse_tree

from ..errors import MGSAError


class PhraseAnnotator:
    def __init__(self, src_dict, tag_dict, levels: int, input_format: str, tokenizer=None, bpe=None,
                 parser_factory: Optional[Callable] = None):
        """input_format: 'text' (parse with the parser `parser_factory()` builds, on first use)
        or 'trees' (each line is one bracketed tree)."""
        self.src_dict, self.tag_dict, self.levels = src_dict, tag_dict, levels
        self.input_format = input_format
        self.tokenizer, self.bpe = tokenizer, bpe
        self.parser_factory = parser_factory
        self.parser = None
        self.style = subword_style(bpe)
        self.unknown_tags = 0  # tags the tag dictionary does not know, mapped to its unk

    def words_and_trees(self, lines: List[str]) -> Tuple[List[List[str]], List[str]]:
        if self.input_format == "trees":
            words = []
            for i, line in enumerate(lines, 1):
                try:
                    _, leaves = parse_tree(line, "input", i)
                except PreprocessError as e:
                    raise MGSAError(f"input line {i}: expected one bracketed tree (--source-input trees): {e}")
                words.append([canonical_token(w) for w in leaves])
            return words, lines
        words = [(self.tokenizer.encode(line) if self.tokenizer is not None else line).split() for line in lines]
        if self.parser is None:
            try:
                self.parser = self.parser_factory()
            except PreprocessError as e:
                raise MGSAError(str(e))
        # the parser sees the text the escapes stand for, as mgsa-preprocess --parser gives it
        return words, self.parser.parse([[canonical_token(w) for w in ws] for ws in words])

    def __call__(self, lines: List[str]):
        """(token tensors, phrases per sentence: [(lengths, tags)] per level), in input order."""
        words, trees = self.words_and_trees(lines)
        tokens, phrases = [], []
        for i, (ws, tree) in enumerate(zip(words, trees), 1):
            text = " ".join(ws)
            segmented = self.bpe.encode(text) if self.bpe is not None else text
            try:
                top, leaves = parse_tree(tree, "input", i)
                check_leaves([canonical_token(w) for w in leaves], [canonical_token(w) for w in ws],
                             "parse", i, "input", i)
                _, counts = split_words(segmented, self.style)
            except (PreprocessError, ValueError) as e:
                raise MGSAError(f"input line {i}: {e}")
            cum = None if counts is None else cumulative(counts)
            sentence = []
            for nodes in partition(top, self.levels):
                tag_ids = [self.tag_dict.index(n[0]) for n in nodes]
                self.unknown_tags += sum(t == self.tag_dict.unk() for t in tag_ids)
                sentence.append((torch.tensor(subword_lengths(nodes, cum)), torch.tensor(tag_ids)))
            tokens.append(self.src_dict.encode_line(segmented, add_if_not_exist=False).long())
            phrases.append(sentence)
        return tokens, phrases


def subword_style(bpe) -> str:
    """How the configured fairseq BPE marks word boundaries (see preprocess/align.py)."""
    if bpe is None:
        return "none"
    return "sentencepiece" if "sentencepiece" in type(bpe).__name__.lower() else "bpe"
