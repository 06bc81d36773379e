"""`mgsa_translation`: fairseq's translation task plus the source's phrase files.

Everything of `translation` (options, several data directories separated by ':',
train shards train1, train2..., filtering by length, batching by tokens, shuffling,
sharding, left/right padding) is fairseq's; this task adds, for every split that has
them, the phrase files written by mgsa-preprocess and their tag dictionary (their format:
mgsa_preprocess.phrase_files), and checks that they fit the token binaries.
"""

import inspect
import itertools
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.data import ConcatDataset, Dictionary, data_utils, indexed_dataset
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask
from mgsa_preprocess.phrase_files import phrase_prefix, tag_dictionary_path

from ..fairseq_patches import shared_embeddings
from ..data.inference_phrases import InferencePhraseDataset, PhraseAnnotator
from ..data.phrase_pair_dataset import PhrasePairDataset, load_phrase_file
from ..errors import MGSAError

logger = logging.getLogger(__name__)

# the fields a batch of phrase-file data adds to fairseq's net_input (see data/phrase_pair_dataset.py)
PHRASE_FIELDS = ("src_phrase_lengths", "src_phrase_counts")


def reads_phrases(model) -> bool:
    """Whether `model` reads the phrase fields: its forward declares them as parameters.
    fairseq passes net_input to the model (and its encoder) as keyword arguments, so this
    is exactly what decides whether they can be given."""
    while isinstance(getattr(model, "module", None), torch.nn.Module):  # DDP / FSDP / proxy wrappers
        model = model.module
    return all(f in inspect.signature(type(model).forward).parameters for f in PHRASE_FIELDS)


def without_phrases(sample):
    """`sample` with a net_input a model that does not read phrases accepts (a copy;
    the phrase tags stay beside it, outside net_input)."""
    if not sample or "net_input" not in sample or not any(f in sample["net_input"] for f in PHRASE_FIELDS):
        return sample
    net_input = {k: v for k, v in sample["net_input"].items() if k not in PHRASE_FIELDS}
    return {**sample, "net_input": net_input}


@dataclass
class MGSATranslationConfig(TranslationConfig):
    phrase_levels: int = field(
        default=0, metadata={"help": "tree levels to load from the phrase files (0: every level found)"}
    )
    source_input: ChoiceEnum(["text", "trees"]) = field(
        default="text", metadata={"help": "fairseq-interactive: source lines are text, parsed with stanza, "
                                          "or one bracketed tree each (pre-parsed input)"}
    )
    parser_lang: Optional[str] = field(default=None, metadata={"help": "stanza language (default: --source-lang)"})
    parser_device: ChoiceEnum(["auto", "cpu", "cuda"]) = field(default="auto", metadata={"help": "stanza device"})
    stanza_dir: Optional[str] = field(default=None, metadata={
        "help": "stanza model directory, or a parser directory written by mgsa-train-parser (loaded offline)"})


def load_tag_dictionaries(paths, src: str) -> Optional[Dictionary]:
    """The tag dictionary of the data directories `paths` (DATA1:DATA2...): they must all
    number the tags alike, since one tag classifier is trained on every directory."""
    found = [(p, Dictionary.load(p)) for p in (tag_dictionary_path(d, src) for d in paths) if os.path.exists(p)]
    if not found:
        return None
    first_path, first = found[0]
    for path, other in found[1:]:
        if other.symbols != first.symbols:
            diff = next((i for i, (a, b) in enumerate(zip(first.symbols, other.symbols)) if a != b),
                        min(len(first), len(other)))
            what = (f"tag {diff} is {first.symbols[diff]!r} in one and {other.symbols[diff]!r} in the other"
                    if diff < min(len(first), len(other)) else f"{len(first)} and {len(other)} tags")
            raise MGSAError(f"{path} and {first_path} are different tag dictionaries ({what}): binarize every "
                            f"data directory with mgsa-preprocess --tagdict {first_path}")
    return first


@register_task("mgsa_translation", dataclass=MGSATranslationConfig)
class MGSATranslationTask(TranslationTask):
    def __init__(self, cfg: MGSATranslationConfig, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self.tag_dictionary = load_tag_dictionaries(utils.split_paths(cfg.data), cfg.source_lang)
        if self.tag_dictionary is not None:
            logger.info(f"[{cfg.source_lang}] phrase tag dictionary: {len(self.tag_dictionary)} types")
        self.required_levels = 0  # the deepest tree level the model reads, known once it is built
        self.tokenizer = self.bpe = None
        self.annotators = {}  # (tokenizer, bpe, input format) -> PhraseAnnotator, for decoding input lines
        self.lines_read = 0  # input lines annotated so far (fairseq-interactive), for error messages
        self.pending_phrases = None  # (tokens, phrases, tag pad) of the last annotated lines, until batched
        self.inference_dataset = None  # the last InferencePhraseDataset, whose batches are being decoded

    def phrase_prefixes(self, data_path: str, split: str, combine: bool):
        """The source binary prefix of each shard of `split`, found as load_langpair_dataset does."""
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        prefixes = []
        for k in itertools.count():
            split_k = split + (str(k) if k > 0 else "")
            for a, b in ((src, tgt), (tgt, src)):
                prefix = os.path.join(data_path, f"{split_k}.{a}-{b}.{src}")
                if indexed_dataset.dataset_exists(prefix, impl=self.cfg.dataset_impl):
                    prefixes.append(prefix)
                    break
            else:
                break
            if not combine:
                break
        return prefixes

    def load_phrase_levels(self, prefix: str):
        levels = []
        for k in itertools.count(1):
            if self.cfg.phrase_levels and k > self.cfg.phrase_levels:
                break
            path = phrase_prefix(prefix, k)
            if not indexed_dataset.dataset_exists(path, impl=self.cfg.dataset_impl):
                if self.cfg.phrase_levels:
                    raise MGSAError(f"{path}.bin/.idx not found: --phrase-levels {self.cfg.phrase_levels} "
                                    f"asks for {self.cfg.phrase_levels} levels")
                break
            levels.append(load_phrase_file(path, self.cfg.dataset_impl))
        return levels

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        prefixes = self.phrase_prefixes(data_path, split, combine)
        shards = [self.load_phrase_levels(p) for p in prefixes]
        num_levels = min((len(s) for s in shards), default=0)
        if num_levels == 0:
            logger.info(f"{split}: no phrase files beside {prefixes[0] if prefixes else data_path}")
            self.check_phrases(split)
            return
        if not os.path.exists(tag_dictionary_path(data_path, self.cfg.source_lang)):
            raise MGSAError(f"{tag_dictionary_path(data_path, self.cfg.source_lang)} not found: phrase files "
                            f"need the tag dictionary that mgsa-preprocess writes beside them")
        levels = []
        for k in range(num_levels):
            per_shard = [s[k] for s in shards]
            levels.append(per_shard[0] if len(per_shard) == 1 else
                          ConcatDataset(per_shard, [self.cfg.upsample_primary] + [1] * (len(per_shard) - 1)))
        if self.cfg.truncate_source:
            logger.warning(f"{split}: --truncate-source cuts sources at {self.cfg.max_source_positions} tokens; "
                           f"phrases are clipped at the same point")
        self.datasets[split] = PhrasePairDataset(
            self.datasets[split], levels, self.tag_dictionary.pad(), name=prefixes[0],
            # fairseq cuts sources at max_source_positions - 1 tokens plus EOS (load_langpair_dataset)
            truncated=self.cfg.max_source_positions - 1 if self.cfg.truncate_source else False,
            tag_dictionary=self.tag_dictionary,
            tag_dictionary_path=tag_dictionary_path(utils.split_paths(self.cfg.data)[0], self.cfg.source_lang))
        logger.info(f"{split}: {num_levels} phrase levels from {phrase_prefix(prefixes[0], '*')}")
        self.check_phrases(split)

    def num_levels(self, split) -> int:
        ds = self.datasets.get(split)
        return len(ds.levels) if isinstance(ds, PhrasePairDataset) else 0

    def check_phrases(self, split):
        if self.required_levels and self.num_levels(split) < self.required_levels:
            raise MGSAError(
                f"split {split!r} has {self.num_levels(split)} phrase levels in {self.cfg.data}, but the model's "
                f"granularities need syn1..syn{self.required_levels}: run mgsa-preprocess with "
                f"--levels {self.required_levels} (or more) on this split")

    def build_model(self, cfg, from_checkpoint=False):
        shared_embeddings.check_task(cfg, self)  # fairseq's own Transformer too, under this task
        model = super().build_model(cfg, from_checkpoint)
        # the model says how many tree levels it reads (syntactic MG-SA); others read none
        self.required_levels = getattr(model, "tree_levels", 0)
        for split in self.datasets:
            self.check_phrases(split)
        if not reads_phrases(model):
            logger.info(f"{type(model).__name__} does not read phrases: the phrase files of the data are not "
                        f"given to it (the model trains and decodes as with --task translation)")
        return model

    # --- models that do not read phrases (fairseq's transformer, the peers) -----------
    # fairseq passes net_input to the model as keyword arguments, so the phrase fields go
    # only to a model whose forward takes them; every command (train, validate, generate,
    # interactive, the hub interface) goes through these three steps.

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        if not reads_phrases(model):
            sample = without_phrases(sample)
        return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad=ignore_grad)

    def valid_step(self, sample, model, criterion):
        if not reads_phrases(model):
            sample = without_phrases(sample)
        return super().valid_step(sample, model, criterion)

    # --- decoding input lines: fairseq-interactive and the hub interface ------------
    # fairseq hands the task raw lines (get_interactive_tokens_and_lengths), then the
    # tokens alone (build_dataset_for_inference): the phrases of those lines wait in
    # `pending_phrases` until that call, which gives them to the dataset, indexed like the
    # sentences. The dataset's collater puts them into each batch (the hub interface
    # decodes that batch); fairseq-interactive rebuilds the batch from its tokens, so
    # inference_step takes them back from the dataset (InferencePhraseDataset).

    def build_tokenizer(self, args):
        self.tokenizer = super().build_tokenizer(args)
        return self.tokenizer

    def build_bpe(self, args):
        self.bpe = super().build_bpe(args)
        return self.bpe

    def annotator(self, tokenizer, bpe, source_input: str) -> PhraseAnnotator:
        key = (id(tokenizer), id(bpe), source_input)
        if key not in self.annotators:
            from mgsa_preprocess.parse import StanzaParser, undoes_escapes

            lang = self.cfg.parser_lang or self.cfg.source_lang
            if self.tag_dictionary is None:
                logger.info("no phrase tag dictionary beside the data: decoding does not need the tags")
            self.annotators[key] = PhraseAnnotator(
                self.src_dict, self.tag_dictionary, self.required_levels, source_input, tokenizer=tokenizer,
                bpe=bpe, parser_factory=lambda: StanzaParser(lang, device=self.cfg.parser_device,
                                                             model_dir=self.cfg.stanza_dir),
                unescape=undoes_escapes(lang))
        return self.annotators[key]

    def annotate(self, lines, tokenizer=None, bpe=None, source_input: Optional[str] = None, first_line: int = 1):
        """Token tensors of `lines` (text, or trees with source_input='trees'; default
        --source-input); their phrases go with them to build_dataset_for_inference."""
        annotator = self.annotator(tokenizer, bpe, source_input or self.cfg.source_input)
        unknown = annotator.unknown_tags
        tokens, phrases = annotator(lines, first_line)
        if self.tag_dictionary is not None and annotator.unknown_tags > unknown:
            # mapped to the unknown tag, as in mgsa-preprocess
            logger.warning(f"{annotator.unknown_tags - unknown} phrase tags of this input are not in the tag "
                           f"dictionary and were mapped to {self.tag_dictionary.unk_word} "
                           f"({annotator.unknown_tags} so far)")
        self.pending_phrases = (tokens, phrases, annotator.tag_dict.pad())
        return tokens

    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        if not self.required_levels:
            return super().get_interactive_tokens_and_lengths(lines, encode_fn)
        tokens = self.annotate(lines, self.tokenizer, self.bpe, first_line=self.lines_read + 1)
        self.lines_read += len(lines)
        return tokens, [t.numel() for t in tokens]

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        dataset = super().build_dataset_for_inference(src_tokens, src_lengths, constraints=constraints)
        pending, self.pending_phrases = self.pending_phrases, None
        self.inference_dataset = None
        # the phrases belong to these sentences only if these are the very tensors annotated
        if (not self.required_levels or pending is None or len(pending[0]) != len(src_tokens)
                or any(a is not b for a, b in zip(pending[0], src_tokens))):
            return dataset
        self.inference_dataset = InferencePhraseDataset(dataset, pending[1], pending[2])
        return self.inference_dataset

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        if self.required_levels and "src_phrase_lengths" not in sample["net_input"]:
            if self.inference_dataset is None or not self.inference_dataset.pop_collated(sample):
                raise MGSAError("the model needs the phrases of every source sentence: decode with "
                                "fairseq-generate on mgsa-preprocess data, fairseq-interactive, or from Python "
                                "with fairseq_mgsa.MGSATransformerModel.from_pretrained(...).translate(...)")
        readers = [reads_phrases(m) for m in models]
        if not any(readers):
            sample = without_phrases(sample)
        elif not all(readers):
            # fairseq's ensemble gives every model the same net_input
            raise MGSAError("an ensemble of models that read phrases (syntactic MG-SA) and models that do not "
                            "cannot be decoded together: decode them separately")
        return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens,
                                      constraints=constraints)
