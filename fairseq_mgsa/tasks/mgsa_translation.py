"""`mgsa_translation`: fairseq's translation task plus the source's phrase files.

Everything of `translation` (options, several data directories separated by ':',
train shards train1, train2..., filtering by length, batching by tokens, shuffling,
sharding, left/right padding) is fairseq's; this task adds, for every split that has
them, the phrase files written by mgsa-preprocess and the tag dictionary
`dict.{src}.tags.txt`, and checks that they fit the token binaries.
"""

import itertools
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from fairseq import utils
from fairseq.data import ConcatDataset, Dictionary, data_utils, indexed_dataset
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ..data.inference_phrases import PhraseAnnotator
from ..data.phrase_pair_dataset import PhrasePairDataset, add_phrases
from ..errors import MGSAError
from ..modules.mgsa_encoder_layer import parse_granularities
from ..modules.partition import SYNTACTIC

logger = logging.getLogger(__name__)


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


def tag_dictionary_path(data_path: str, src: str) -> str:
    return os.path.join(data_path, f"dict.{src}.tags.txt")


@register_task("mgsa_translation", dataclass=MGSATranslationConfig)
class MGSATranslationTask(TranslationTask):
    def __init__(self, cfg: MGSATranslationConfig, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        path = tag_dictionary_path(utils.split_paths(cfg.data)[0], cfg.source_lang)
        self.tag_dictionary = Dictionary.load(path) if os.path.exists(path) else None
        if self.tag_dictionary is not None:
            logger.info(f"[{cfg.source_lang}] phrase tag dictionary: {len(self.tag_dictionary)} types")
        self.required_levels = 0  # the deepest tree level the model reads, known once it is built
        self.tokenizer = self.bpe = self.annotator = None
        self.pending_phrases = {}  # fairseq-interactive: token tuple -> phrases, until decoded

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
            path = f"{prefix}.syn{k}"
            if not indexed_dataset.dataset_exists(path, impl=self.cfg.dataset_impl):
                if self.cfg.phrase_levels:
                    raise MGSAError(f"{path}.bin/.idx not found: --phrase-levels {self.cfg.phrase_levels} "
                                    f"asks for {self.cfg.phrase_levels} levels")
                break
            levels.append(data_utils.load_indexed_dataset(path, None, self.cfg.dataset_impl))
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
        if self.tag_dictionary is None:
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
            truncated=self.cfg.truncate_source)
        logger.info(f"{split}: {num_levels} phrase levels from {prefixes[0]}.syn*")
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
        granularities = parse_granularities(getattr(cfg, "mgsa_granularities", "") or "")
        levels = [int(m.group(1)) for m in map(SYNTACTIC.match, granularities) if m]
        self.required_levels = max(levels, default=0)
        for split in self.datasets:
            self.check_phrases(split)
        return super().build_model(cfg, from_checkpoint)

    # --- fairseq-interactive: phrases for input lines -------------------------------
    # fairseq-interactive hands the task raw lines (get_interactive_tokens_and_lengths)
    # but passes only src_tokens on to inference_step, so the phrases of each sentence
    # wait in `pending_phrases`, keyed by its tokens, until its batch is decoded.

    def build_tokenizer(self, args):
        self.tokenizer = super().build_tokenizer(args)
        return self.tokenizer

    def build_bpe(self, args):
        self.bpe = super().build_bpe(args)
        return self.bpe

    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        if not self.required_levels:
            return super().get_interactive_tokens_and_lengths(lines, encode_fn)
        if self.annotator is None:
            from preprocess.parse import StanzaParser

            lang = self.cfg.parser_lang or self.cfg.source_lang
            self.annotator = PhraseAnnotator(
                self.src_dict, self.tag_dictionary, self.required_levels, self.cfg.source_input,
                tokenizer=self.tokenizer, bpe=self.bpe,
                parser_factory=lambda: StanzaParser(lang, device=self.cfg.parser_device, model_dir=self.cfg.stanza_dir))
        unknown = self.annotator.unknown_tags
        tokens, phrases = self.annotator(lines)
        if self.annotator.unknown_tags > unknown:  # mapped to the unknown tag, as in mgsa-preprocess
            logger.warning(f"{self.annotator.unknown_tags - unknown} phrase tags of this input are not in the tag "
                           f"dictionary and were mapped to {self.tag_dictionary.unk_word} "
                           f"({self.annotator.unknown_tags} so far)")
        for t, p in zip(tokens, phrases):
            self.pending_phrases.setdefault(tuple(t.tolist()), []).append(p)
        return tokens, [t.numel() for t in tokens]

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        if self.required_levels and "src_phrase_lengths" not in sample["net_input"]:
            src = sample["net_input"]["src_tokens"]
            rows = [tuple(r[r.ne(self.src_dict.pad())].tolist()) for r in src.cpu()]
            missing = [r for r in rows if not self.pending_phrases.get(r)]
            if missing:
                raise MGSAError("the model needs phrases for every source sentence: decode with "
                                "fairseq-generate on mgsa-preprocess data, or fairseq-interactive")
            add_phrases(sample, [self.pending_phrases[r].pop(0) for r in rows], self.tag_dictionary.pad())
            for r in rows:
                if not self.pending_phrases[r]:
                    del self.pending_phrases[r]
        return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens,
                                      constraints=constraints)
