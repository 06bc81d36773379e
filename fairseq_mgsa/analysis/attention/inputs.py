"""The sentences mgsa-attention draws, batched as fairseq reads them: --test-ids from the
binarized split (fairseq-generate, phrase files included), --input lines as fairseq-interactive
encodes them (raw text, parsed for syntactic MG-SA, or one bracketed tree per line).

Words missing from the model's dictionary become <unk>: the share of <unk> among the source
tokens is measured for every checkpoint before any forward. A model whose dictionary holds
subwords (`@@` entries) given text that was not split into them (no --bpe-codes, none in the
checkpoint) is refused above UNK_LIMIT; any other input above it is drawn with a warning, on
the terminal, in manifest.json and in the figures' titles.
"""

import os
from argparse import Namespace
from typing import List, Optional

import torch

from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.text_files import lines as text_lines
from mgsa_preprocess.trees import parse_tree

from ...data.inference_phrases import PhraseAnnotator
from ...errors import MGSAError

UNK_LIMIT = 0.10  # share of <unk> source tokens above which a figure shows few of the real words


def test_split(task, ids: List[int], data: str, split: str = "test"):
    """The binarized split, with every id of --test-ids checked against its size."""
    try:
        task.load_dataset(split)
    except FileNotFoundError as e:
        raise MGSAError(f"{data}: no {split!r} split to take --test-ids from ({e})")
    dataset = task.dataset(split)
    bad = [i for i in ids if not 0 <= i < len(dataset)]
    if bad:
        where = os.path.join(data, f"{split}.{task.cfg.source_lang}-{task.cfg.target_lang}.{task.cfg.source_lang}")
        raise MGSAError(f"--test-ids {bad[0]}: {where} has {len(dataset)} sentences (ids 0-{len(dataset) - 1})")
    return dataset


def read_lines(path: str, source_input: str) -> List[str]:
    if not os.path.isfile(path):
        raise MGSAError(f"input file {path} not found (--input)")
    try:  # a byte that is not UTF-8: one line naming the line and column
        lines = [line.rstrip("\n") for _, line in text_lines(path, "the input file (--input)")]
    except PreprocessError as e:
        raise MGSAError(str(e)) from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            raise MGSAError(f"{path}, line {i}: empty line, expected one sentence (or one tree) per line")
    if not lines:
        raise MGSAError(f"{path} is empty: expected one sentence (or one tree) per line")
    if source_input == "trees":  # every line one whole tree, checked before any model is loaded
        for i, line in enumerate(lines, 1):
            try:
                parse_tree(line, path, i)
            except PreprocessError as e:
                raise MGSAError(f"{e} (--source-input trees: one bracketed tree per line)")
    return lines


def encoders(task, cfg, args):
    """The tokenizer and BPE the input lines go through: the checkpoint's own, or --bpe-codes."""
    tokenizer = task.build_tokenizer(cfg.tokenizer)
    bpe = task.build_bpe(Namespace(bpe="subword_nmt", bpe_codes=args.bpe_codes, bpe_separator=args.bpe_separator)
                         if args.bpe_codes else cfg.bpe)
    return tokenizer, bpe


def input_batch(task, tokenizer, bpe, lines: List[str], first: int, path: str, args):
    """The batch fairseq-interactive would decode for `lines` (from line `first` of the
    file, 0-based), phrases included (the task's own path)."""
    try:
        if getattr(task, "required_levels", 0):  # MG-SA with tree levels: the task parses / reads trees
            tokens, lengths = task.get_interactive_tokens_and_lengths(lines, None)
        elif args.source_input == "trees":  # a model without phrases: the trees' words, as the task reads them
            tokens = PhraseAnnotator(task.source_dictionary, None, 0, "trees", tokenizer=None,
                                     bpe=bpe)(lines, first + 1)[0]
            lengths = [t.numel() for t in tokens]
        else:
            def encode(line):
                line = tokenizer.encode(line) if tokenizer is not None else line
                return bpe.encode(line) if bpe is not None else line
            tokens, lengths = task.get_interactive_tokens_and_lengths(lines, encode)
    except MGSAError as e:
        raise MGSAError(f"{path}: {e}")
    dataset = task.build_dataset_for_inference(tokens, lengths)
    batch = dataset.collater([dataset[i] for i in range(len(lines))])
    batch["id"] = batch["id"] + first  # line numbers in the file
    return batch


def unknown_counts(batch, dictionary) -> List[List[int]]:
    """[<unk> tokens, source tokens] of each sentence of the batch, end-of-sentence excluded."""
    src = batch["net_input"]["src_tokens"]
    words = src.ne(dictionary.pad()) & src.ne(dictionary.eos())
    return torch.stack([src.eq(dictionary.unk()).sum(1), words.sum(1)], dim=1).tolist()


def reads_subwords(dictionary, separator: str) -> bool:
    return any(s.endswith(separator) for s in dictionary.symbols[dictionary.nspecial:])


def check_unknowns(counts: List[List[int]], dictionary, subwords_given: Optional[bool], where: str, path: str,
                   separator: str) -> dict:
    """The <unk> share of one checkpoint's input; a refusal (MGSAError) for text not split into the
    subwords a model reads, a warning (returned under "warning") for any other input above UNK_LIMIT.
    subwords_given: whether a BPE segmented --input lines (None: a binarized split)."""
    unk, tokens = sum(c[0] for c in counts), sum(c[1] for c in counts)
    rate = unk / tokens if tokens else 0.0
    out = {"unk": unk, "tokens": tokens, "rate": round(rate, 4)}
    if rate <= UNK_LIMIT:
        return out
    share = f"{rate:.0%} of the source tokens of {where} are <unk> ({unk} of {tokens})"
    if subwords_given is False and reads_subwords(dictionary, separator):
        raise MGSAError(f"{share} for {path}: its dictionary holds subwords ('{separator}' entries) and the input "
                        f"was not split into them: give --bpe-codes (the subword-nmt codes it was trained with)")
    check = "" if subwords_given is None else " (is the text tokenized as the training data" + (
        ", and are --bpe-codes the model's own?)" if subwords_given else "?)")
    out["warning"] = f"{share} for {path}: its figures show few of the real words{check}"
    return out


def unknown_note(counts: List[int], label: str) -> Optional[str]:
    """The warning a figure's title carries when a sentence's <unk> share is above UNK_LIMIT."""
    unk, tokens = counts
    if tokens and unk / tokens > UNK_LIMIT:
        return f"warning: {unk} of the {tokens} source tokens are <unk> for {label} ({unk / tokens:.0%})"
    return None
