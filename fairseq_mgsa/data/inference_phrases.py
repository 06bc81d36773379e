"""Phrases for sentences that arrive at decoding time (fairseq-interactive, the hub interface).

Each input line is either plain text, parsed with stanza (the same pipeline as
`mgsa-preprocess --parser stanza`), or one bracketed tree (pre-parsed input). The
words are segmented with the BPE fairseq was given (--bpe, with its --bpe-separator),
and the tree's top levels are aligned to the subwords exactly as mgsa-preprocess does
it: the same tree normalisation, partition and alignment code is used.

The phrases then travel with their sentence: `InferencePhraseDataset` holds them by
the sample id fairseq gives each input line, and its collater puts them into the batch
beside the tokens, whatever order fairseq's batching puts the sentences in.
"""

import collections
import re
from typing import Callable, List, Optional, Tuple

import torch
from fairseq.data import Dictionary
from sacremoses import MosesTokenizer

from mgsa_preprocess.align import cumulative, split_words, subword_lengths
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.parse import EMPTY_TREE
from mgsa_preprocess.partition import partition
from mgsa_preprocess.trees import canonical_token, check_leaves, parse_tree

from ..errors import MGSAError
from .phrase_pair_dataset import PhrasePairDataset

# Moses' XML escapes (tokenizer.perl's escape-special-chars) and its aggressive hyphen
# split (-a, also fairseq's --tokenizer moses): "a-b" -> "a @-@ b".
_ENTITY = re.compile(r"&(amp|#124|lt|gt|apos|quot|#91|#93);")
_ESCAPED_CHARS = "&|<>'\"[]"
DASH = "@-@"


class TrainingTextForm:
    """The form a tree leaf had in the training text, read from the source dictionary.

    Trees (stanza's, or PTB files) give leaves as plain text (`&`, `'s`, `-`), while
    training text tokenized with Moses (the recipes, and fairseq's --tokenizer moses)
    escapes them (`&amp;`, `&apos;s`, and `@-@` for a hyphen inside a word). The
    vocabulary shows which convention the model was trained on: Moses-escaped text
    holds entities and none of the characters they stand for; hyphens were split where
    `@-@`, segmented by the BPE, is made of known pieces. A leaf is first reduced to its
    plain text with the tree reader's `canonical_token` (so `&amp;` and `-LRB-` leaves
    are read too), then written in the training form. A `-` leaf becomes `@-@` where
    Moses writes it: between two leaves that touch it with a letter or digit (trees do
    not keep the spacing; a leaf written `@-@` stays as it is).
    """

    def __init__(self, src_dict, separator: str = "@@", segment: Callable[[str], str] = lambda word: word,
                 moses: bool = True):
        """segment: the BPE, applied to one word. moses False: the training text was never
        Moses-tokenized (a Chinese source, mgsa-segment-zh's): a leaf is written as it is."""
        symbols = [s[:-len(separator)] if separator and s.endswith(separator) else s
                   for s in src_dict.symbols[src_dict.nspecial:]]
        symbols = [s.strip("\u2581") for s in symbols]  # sentencepiece's word marks
        has_entity = any(_ENTITY.search(s) for s in symbols)
        has_plain = any(c in s for s in symbols for c in _ESCAPED_CHARS[1:])  # '&' is in the entities too
        self.escape = moses and (has_entity or not has_plain)
        self.dash_splits = moses and all(src_dict.index(p) != src_dict.unk() for p in segment(DASH).split())
        self.moses = MosesTokenizer(lang="en") if self.escape else None  # escaping does not depend on the language

    def __call__(self, leaves: List[str]) -> List[str]:
        plain = [canonical_token(w) for w in leaves]
        out = []
        for i, (leaf, word) in enumerate(zip(leaves, plain)):
            if leaf == DASH:
                out.append(leaf)
                continue
            if (word == "-" and self.dash_splits and 0 < i < len(plain) - 1
                    and plain[i - 1][-1:].isalnum() and plain[i + 1][:1].isalnum()):
                out.append(DASH)
                continue
            out.append(self.moses.escape_xml(word) if self.escape else word)
        return out


class PhraseAnnotator:
    def __init__(self, src_dict, tag_dict, levels: int, input_format: str, tokenizer=None, bpe=None,
                 parser_factory: Optional[Callable] = None, unescape: bool = True):
        """input_format: 'text' (parse with the parser `parser_factory()` builds, on first use)
        or 'trees' (each line is one bracketed tree). tag_dict None: tags are not known
        (decoding from a directory without the tag dictionary; the model does not read them).
        unescape False (a Chinese source, mgsa_preprocess.parse.undoes_escapes): the parser is
        given the words as they are and tree leaves are not Moses-escaped, as mgsa-preprocess does."""
        self.src_dict, self.levels = src_dict, levels
        self.tag_dict = tag_dict if tag_dict is not None else Dictionary()
        self.input_format = input_format
        self.tokenizer, self.bpe = tokenizer, bpe
        self.parser_factory = parser_factory
        self.parser = None
        self.style, self.separator = subword_style(bpe)
        self.unescape = unescape
        self.training_form = TrainingTextForm(src_dict, self.separator,
                                              bpe.encode if bpe is not None else lambda word: word, moses=unescape)
        self.unknown_tags = 0  # tags the tag dictionary does not know, mapped to its unk

    def words_and_trees(self, lines: List[str], first_line: int) -> Tuple[List[List[str]], List[str]]:
        """The words of each line and its tree; an empty (or whitespace-only) line is the
        empty sentence, as fairseq translates it: the empty tree, whose only phrase is the
        end of sentence (mgsa-preprocess writes the same tree for it; stanza cannot parse it)."""
        if self.input_format == "trees":
            words = []
            for i, line in enumerate(lines, first_line):
                if not line.strip():
                    words.append([])
                    continue
                try:
                    _, leaves = parse_tree(line, "input", i)
                except PreprocessError as e:
                    raise MGSAError(f"input line {i}: expected one bracketed tree (--source-input trees): {e}")
                words.append(self.training_form(leaves))
            return words, [line if ws else EMPTY_TREE for line, ws in zip(lines, words)]
        words = [(self.tokenizer.encode(line) if self.tokenizer is not None else line).split() for line in lines]
        if not any(words):
            return words, [EMPTY_TREE] * len(words)
        if self.parser is None:
            try:
                self.parser = self.parser_factory()
            except PreprocessError as e:
                raise MGSAError(str(e))
        # the parser sees the text the escapes stand for, as mgsa-preprocess --parser gives it
        trees = iter(self.parser.parse([[canonical_token(w) for w in ws] if self.unescape else ws
                                        for ws in words if ws]))
        return words, [next(trees) if ws else EMPTY_TREE for ws in words]

    def __call__(self, lines: List[str], first_line: int = 1):
        """(token tensors, phrases per sentence: [(lengths, tags)] per level), in input order.
        first_line: the number of lines[0] in the input, for error messages."""
        words, trees = self.words_and_trees(lines, first_line)
        tokens, phrases = [], []
        for i, (ws, tree) in enumerate(zip(words, trees), first_line):
            text = " ".join(ws)
            segmented = self.bpe.encode(text) if self.bpe is not None else text
            try:
                top, leaves = parse_tree(tree, "input", i)
                check_leaves([canonical_token(w) for w in leaves], [canonical_token(w) for w in ws],
                             "parse", i, "input", i)
                _, counts = split_words(segmented, self.style, self.separator)
            except (PreprocessError, ValueError) as e:
                raise MGSAError(f"input line {i}: {e}")
            cum = None if counts is None else cumulative(counts)
            sentence = []
            for nodes in partition(top, self.levels):
                tag_ids = [self.tag_dict.index(n[0]) for n in nodes]
                self.unknown_tags += sum(t == self.tag_dict.unk() for t in tag_ids)
                sentence.append((torch.tensor(subword_lengths(nodes, cum), dtype=torch.long),
                                 torch.tensor(tag_ids, dtype=torch.long)))
            line_tokens = self.src_dict.encode_line(segmented, add_if_not_exist=False).long()
            for k, (lengths, _) in enumerate(sentence, 1):
                if int(lengths.sum()) != line_tokens.numel() - 1:  # the EOS token is a phrase of its own
                    raise MGSAError(
                        f"input line {i}: the phrases of tree level {k} cover {int(lengths.sum())} tokens, but "
                        f"the line has {line_tokens.numel() - 1} after BPE ({segmented!r}): the BPE does not mark "
                        f"word boundaries as expected ({self.style}, separator {self.separator!r}); check --bpe "
                        f"and --bpe-separator against the ones the training data was made with")
            tokens.append(line_tokens)
            phrases.append(sentence)
        return tokens, phrases


def subword_style(bpe) -> Tuple[str, str]:
    """(style, separator): how the configured fairseq BPE marks word boundaries (see preprocess/align.py)."""
    if bpe is None:
        return "none", "@@"
    if "sentencepiece" in type(bpe).__name__.lower():
        return "sentencepiece", "@@"
    # subword-nmt keeps its --bpe-separator in the apply_bpe object; fastBPE always uses @@
    return "bpe", getattr(getattr(bpe, "bpe", None), "separator", "@@")


class InferencePhraseDataset(PhrasePairDataset):
    """The dataset fairseq builds for decoding (build_dataset_for_inference), with the
    phrases of each input sentence, indexed like the sentences (fairseq's sample ids).

    fairseq-interactive keeps only src_tokens and src_lengths of each batch it gets from
    the iterator; so the collater also queues the phrase fields of every batch it makes,
    and the task attaches them again to the batch it is given to decode (batches are
    decoded in the order they are collated: the iterator is consumed lazily, one batch
    at a time). `pop_collated` checks that the tokens are those of the queued batch.
    """

    def __init__(self, dataset, phrases, tag_pad: int):
        levels = [[torch.cat(sentence[k]) for sentence in phrases] for k in range(len(phrases[0]))]
        super().__init__(dataset, levels, tag_pad, name="input")
        self.collated = collections.deque()

    def collater(self, samples):
        batch = super().collater(samples)
        if "net_input" in batch:
            self.collated.append((batch["net_input"]["src_tokens"], {
                "src_phrase_lengths": batch["net_input"]["src_phrase_lengths"],
                "src_phrase_counts": batch["net_input"]["src_phrase_counts"],
                "phrase_tags": batch["phrase_tags"]}))
        return batch

    def pop_collated(self, sample):
        """Put the phrases of the oldest collated batch into `sample` (its tokens must match)."""
        src = sample["net_input"]["src_tokens"]
        if not self.collated:
            return False
        tokens, fields = self.collated.popleft()
        if tokens.shape != src.shape or not torch.equal(tokens, src.cpu()):
            raise MGSAError("the batch to decode is not the one the input phrases were batched with: decode "
                            "the batches of build_dataset_for_inference in the order they come")
        device = src.device
        sample["net_input"]["src_phrase_lengths"] = fields["src_phrase_lengths"].to(device)
        sample["net_input"]["src_phrase_counts"] = fields["src_phrase_counts"].to(device)
        sample["phrase_tags"] = fields["phrase_tags"].to(device)
        return True
