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

from fairseq import utils
from fairseq.data import ConcatDataset, Dictionary, data_utils, indexed_dataset
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ..data.phrase_pair_dataset import PhrasePairDataset
from ..errors import MGSAError
from ..modules.mgsa_encoder_layer import parse_granularities
from ..modules.partition import SYNTACTIC

logger = logging.getLogger(__name__)


@dataclass
class MGSATranslationConfig(TranslationConfig):
    phrase_levels: int = field(
        default=0, metadata={"help": "tree levels to load from the phrase files (0: every level found)"}
    )


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
