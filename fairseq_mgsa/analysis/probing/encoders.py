"""The encoders mgsa-probe reads: a trained checkpoint's, frozen (set-up 1), or a 3-layer
encoder of a registered system trained from scratch on the probing data (set-up 2).

Both are the NMT models' own encoders: set-up 1 loads the checkpoint with fairseq's
checkpoint_utils; set-up 2 builds the whole model of a system of fairseq_mgsa/systems.py
through fairseq's task and architecture registries (the `tiny` size: d 128, ffn 256,
4 heads, 3 encoder layers) on a word-level vocabulary, and keeps its encoder. Syntactic
systems get the sentence's tree partition (phrase boundaries); the tag loss is not used.
"""

import argparse
import os
from typing import List, Optional, Sequence, Tuple

import torch
from fairseq.data import Dictionary
from mgsa_preprocess.align import split_words
from mgsa_preprocess.partition import partition
from mgsa_preprocess.phrase_files import tag_dictionary_path
from mgsa_preprocess.progress import bar

from ... import systems as registry
from .labels import ProbeError, Sentence
from .train import Batch, Item, collate

USER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # fairseq_mgsa
SCRATCH_LAYERS = 3


def encode(encoder, batch: Batch) -> Tuple[torch.Tensor, torch.Tensor]:
    """(top-layer states B x T x C, padding mask B x T) of a batch."""
    extra = {}
    if batch.phrase_lengths is not None:
        extra = {"src_phrase_lengths": batch.phrase_lengths, "src_phrase_counts": batch.phrase_counts}
    out = encoder(batch.tokens, src_lengths=batch.lengths, **extra)
    return out["encoder_out"][0].transpose(0, 1), out["encoder_padding_mask"][0]  # T x B x C -> B x T x C


# Above this share of <unk> tokens a frozen encoder's row mostly probes what it makes of <unk>.
UNK_LIMIT = 0.05
EXPECTED_DATA = ("the data directory the checkpoint was trained on, holding its dictionaries dict.SRC.txt and "
                 "dict.TGT.txt")


def _first_line(e: BaseException) -> str:
    """The error's type and first sentence (torch's weights-only refusal runs to a paragraph)."""
    text = str(e).strip().split("\n")[0].split(". ")[0]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _data_dir_problem(data_dir: Optional[str], languages: Tuple[Optional[str], Optional[str]]) -> Optional[str]:
    """What is wrong with a data directory, before fairseq's task reads it (None: nothing seen)."""
    if not data_dir or not os.path.isdir(data_dir):
        return "no such directory"
    names = os.listdir(data_dir)
    if not any(n.startswith("dict.") and n.endswith(".txt") for n in names):
        return "no dict.*.txt in it"
    missing = [f"dict.{lang}.txt" for lang in languages if lang and f"dict.{lang}.txt" not in names]
    if missing:
        return f"no {' or '.join(missing)} in it (the checkpoint's languages are {languages[0]}-{languages[1]})"
    return None


def check_data_option(data: str):
    """--data, before any checkpoint is loaded: a directory with dictionaries."""
    problem = _data_dir_problem(data, (None, None))
    if problem:
        raise ProbeError(f"{problem} (--data): expected {EXPECTED_DATA}", data)


def load_checkpoint(path: str, data: Optional[str], option: str = "--checkpoint"):
    """(encoder in eval mode, fairseq task, the tree levels the model reads) of a checkpoint; a file
    that is not a fairseq checkpoint, or a data directory without its dictionaries, is a ProbeError naming it."""
    from fairseq import checkpoint_utils

    import fairseq_mgsa  # noqa: F401  (registers the plugin; lets torch.load read the checkpoint)

    if not os.path.exists(path):
        raise ProbeError(f"checkpoint not found ({option})", path)
    if os.path.isdir(path):
        raise ProbeError(f"a directory, not a checkpoint ({option}): give a .pt file in it, e.g. checkpoint_best.pt",
                         path)
    try:  # torch.load's own errors on a text or other file (UnpicklingError, RuntimeError, EOFError ...)
        state = checkpoint_utils.load_checkpoint_to_cpu(path, {"data": data} if data else None)
    except Exception as e:  # noqa: BLE001  (reported with its type and message, not hidden)
        raise ProbeError(f"not a fairseq checkpoint ({option}): it cannot be loaded as one ({_first_line(e)})", path)
    cfg, args = (state.get("cfg"), state.get("args")) if isinstance(state, dict) else (None, None)
    if cfg is None and args is None or "model" not in state:
        raise ProbeError(f"not a fairseq checkpoint ({option}): no 'model' and 'cfg' entries", path)
    task_cfg = cfg.task if cfg is not None else args
    data_dir = (getattr(task_cfg, "data", None) or "").split(":")[0]  # fairseq's shards: DIR1:DIR2
    problem = _data_dir_problem(data_dir, (getattr(task_cfg, "source_lang", None),
                                           getattr(task_cfg, "target_lang", None)))
    if problem and data:
        raise ProbeError(f"{problem} (--data): expected {EXPECTED_DATA}", data)
    if problem:
        raise ProbeError(f"its data directory {data_dir or '(none)'}, recorded at training: {problem}; "
                         f"give {EXPECTED_DATA} with --data", path)
    where = "--data " + data if data else f"its data directory {data_dir}"
    try:
        models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], state=state)
    except FileNotFoundError as e:  # a dictionary of the languages fairseq read from the binaries' names
        raise ProbeError(f"{where} has no {os.path.basename(e.filename or str(e))}: expected {EXPECTED_DATA}", path)
    except RuntimeError as e:
        if "size mismatch" not in str(e):
            raise
        raise ProbeError(f"the dictionaries of {where} are not the ones it was trained with (the embedding sizes "
                         f"differ): expected {EXPECTED_DATA}", path)
    except Exception as e:  # noqa: BLE001
        if "Could not infer language pair" not in str(e):
            raise
        raise ProbeError(f"{where} has no binarized split (train.SRC-TGT.*) to tell the checkpoint's languages "
                         f"from: expected {EXPECTED_DATA}", path)
    return models[0].encoder.eval(), task, getattr(models[0], "tree_levels", 0)


def subword_entries(dictionary: Dictionary, separator: str) -> int:
    """Entries of a subword dictionary: continued BPE pieces ('@@' at the end) or sentencepiece's '▁' pieces."""
    return sum(1 for sym in dictionary.symbols if sym.endswith(separator) or sym.startswith("\u2581"))


def check_unknown(frozen: "FrozenEncoder", bpe_given: bool) -> Optional[str]:
    """After items(): an error when the checkpoint reads subwords, no --bpe was given and more
    than UNK_LIMIT of the tokens are <unk>; a warning (returned) when the rate is that high otherwise."""
    rate = frozen.unknown / max(1, frozen.total)
    if rate <= UNK_LIMIT:
        return None
    share = (f"{100 * rate:.1f}% of the probing text's tokens are <unk> in its dictionary "
             f"({frozen.unknown} of {frozen.total})")
    pieces = subword_entries(frozen.src_dict, frozen.bpe_separator)
    if not bpe_given and pieces:
        raise ProbeError(f"{share}: the dictionary holds subwords ({pieces} of its {len(frozen.src_dict)} entries "
                         f"are BPE pieces, e.g. ending in {frozen.bpe_separator!r}) and no --bpe was given; give "
                         f"the BPE it was trained with, e.g. --bpe subword_nmt --bpe-codes CODES "
                         f"({frozen.option})", frozen.path)
    return (f"{frozen.option} ({frozen.path}): {share}, above {100 * UNK_LIMIT:.0f}%: its row mostly probes "
            f"what the encoder makes of <unk>; check --bpe/--bpe-codes and --data")


class FrozenEncoder:
    """Set-up 1: a trained checkpoint's encoder; the sentences segmented with its BPE."""

    def __init__(self, path: str, data: Optional[str] = None, bpe: Optional[str] = None,
                 bpe_codes: Optional[str] = None, bpe_separator: str = "@@", option: str = "--checkpoint"):
        from fairseq.data import encoders

        self.path, self.option = path, option
        # the encoder alone (the rest is freed), and the tree levels the model reads
        self.encoder, self.task, self.levels = load_checkpoint(path, data, option)
        self.src_dict = self.task.source_dictionary
        self.bpe, self.bpe_separator = None, bpe_separator
        if bpe:
            self.bpe = encoders.build_bpe(argparse.Namespace(bpe=bpe, bpe_codes=bpe_codes, bpe_separator=bpe_separator))
        self.unknown = self.total = 0  # tokens the checkpoint's dictionary does not know

    def items(self, sentences: Sequence[Sentence], tree_texts: Sequence[Tuple[int, str]]) -> List[Item]:
        """The sentences as the model reads them: words in the training text's form
        (Moses escapes as its dictionary shows), segmented by its BPE; for a syntactic model the
        phrases of the tree's top levels, from the task's decoding path (PhraseAnnotator)."""
        from ...data.inference_phrases import TrainingTextForm, subword_style

        style, separator = subword_style(self.bpe)
        segment = self.bpe.encode if self.bpe is not None else (lambda text: text)
        form = TrainingTextForm(self.src_dict, separator, segment)
        items = []
        for s, (line, _) in zip(sentences, tree_texts):
            segmented = segment(" ".join(form(s.words)))
            try:
                words, counts = split_words(segmented, style, separator)
            except ValueError as e:
                raise ProbeError(f"the BPE's output cannot be split into words: {e}", "trees", line)
            if len(words) != len(s.words):
                raise ProbeError(f"{len(s.words)} words became {len(words)} after BPE ({segmented!r})", "trees", line)
            tokens = self.src_dict.encode_line(segmented, add_if_not_exist=False, append_eos=True).long()
            self.unknown += int((tokens == self.src_dict.unk()).sum())
            self.total += tokens.numel() - 1
            items.append(Item(tokens, counts or [1] * len(words)))
        if self.levels:
            annotate = self.task.annotator(None, self.bpe, "trees")
            tokens, phrases = annotate([text for _, text in tree_texts])
            for it, t, sentence_phrases in zip(items, tokens, phrases):
                if not torch.equal(t, it.tokens):  # the two paths segment the same words alike
                    raise ProbeError("the phrase annotator's tokens differ from the probe's", self.path)
                it.phrases = [lengths for lengths, _ in sentence_phrases]
        return items

    @torch.no_grad()
    def features(self, items: List[Item], batch_size: int, desc: str) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """(sentence features N x C, word features per sentence: list of W_i x C)."""
        from .train import pool

        sentences, words = [], []
        for start in bar(iterable=range(0, len(items), batch_size), desc=desc, unit="batch"):
            chunk = items[start:start + batch_size]
            batch = collate(chunk, self.src_dict.pad())
            x, mask = encode(self.encoder, batch)
            s, w = pool(x, mask, batch)
            sentences.append(s)
            words.extend(w.split([len(it.pieces) for it in chunk]))
        return torch.cat(sentences), words


def word_items(sentences: Sequence[Sentence], vocab: Dictionary, levels: int, blind: bool = False) -> List[Item]:
    """Set-up 2's input: one token per word (unknown words: <unk>), the tree's top `levels`
    levels as phrase lengths in words. blind: every word is <unk> (the partition-only control)."""
    items = []
    for s in sentences:
        ids = [vocab.unk() if blind else vocab.index(w) for w in s.words] + [vocab.eos()]
        phrases = None
        if levels:
            phrases = [torch.tensor([n[2] - n[1] for n in nodes], dtype=torch.long)
                       for nodes in partition(s.top, levels)]
        items.append(Item(torch.tensor(ids, dtype=torch.long), [1] * len(s.words), phrases))
    return items


def build_vocab(sentences: Sequence[Sentence]) -> Dictionary:
    vocab = Dictionary()
    for s in sentences:
        for w in s.words:
            vocab.add_symbol(w)
    return vocab


def tag_vocab(sentences: Sequence[Sentence], levels: int) -> Dictionary:
    tags = Dictionary()
    for s in sentences:
        for nodes in partition(s.top, levels):
            for n in nodes:
                tags.add_symbol(n[0])
    return tags


def scratch_encoder(system: registry.System, extra_args: Sequence[str], vocab: Dictionary, tags: Dictionary,
                    workdir: str):
    """A registered system's encoder, 3 layers at the `tiny` size, built by fairseq from the
    system's options (its data directory holds only the dictionaries), and the tree levels
    it reads (0: none)."""
    from fairseq import options, tasks

    os.makedirs(workdir, exist_ok=True)
    for lang in ("src", "tgt"):
        vocab.save(os.path.join(workdir, f"dict.{lang}.txt"))
    if system.needs_trees:
        tags.save(tag_dictionary_path(workdir, "src"))
    argv = [workdir, "--user-dir", USER_DIR, "--source-lang", "src", "--target-lang", "tgt",
            *system.train_args("tiny"), *extra_args, "--encoder-layers", str(SCRATCH_LAYERS),
            "--decoder-layers", "1", "--dropout", "0.1", "--cpu"]
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    task = tasks.setup_task(args)
    model = task.build_model(args)
    return model.encoder, getattr(model, "tree_levels", 0)
