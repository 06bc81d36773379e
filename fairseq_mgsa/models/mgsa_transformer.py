"""`mgsa_transformer`: fairseq's Transformer with MG-SA in chosen encoder layers.

The decoder, embeddings and every other encoder layer are fairseq's own. The model
options are dataclass fields (so fairseq-hydra-train sees them too); on the command
line they are --mgsa-layers, --mgsa-granularities, --mgsa-composition,
--mgsa-interaction and --mgsa-onlstm-chunk-size.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import torch
import torch.nn as nn
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerEncoderBase
from mgsa_preprocess.phrase_files import tag_dictionary_path
from torch import Tensor

from ..errors import MGSAError
from ..modules.mgsa.encoder_layer import MGSAEncoderLayer
from ..modules.mgsa.granularities import SYNTACTIC, Granularities, Granularity
from ..modules.mgsa.partition import Partition, build_partitions
from ..modules.mgsa.phrase_memory import ComposedPhrases
from .base import SIZES, MethodTransformerModel, parse_layers, place_layers


@dataclass
class MGSAConfig(FairseqDataclass):
    mgsa_layers: str = field(
        default="1",
        metadata={"help": "encoder layers (1 = bottom) whose self-attention is MG-SA: "
                          "a comma-separated list such as 1,2,3, or 'all'"},
    )
    mgsa_granularities: str = field(
        default="word,ngram2,ngram3,ngram4",
        metadata={"help": "granularity of each head group, heads split evenly in this order: "
                          "'word', 'ngramN' (non-overlapping n-grams) or 'synK' (level K of the parse tree)"},
    )
    mgsa_composition: ChoiceEnum(["max", "lstm", "san"]) = field(
        default="san", metadata={"help": "phrase composition: max-pooling, LSTM, or self-attention (SANs)"}
    )
    mgsa_interaction: ChoiceEnum(["none", "lstm", "onlstm"]) = field(
        default="none", metadata={"help": "phrase interaction: none, LSTM, or ON-LSTM"}
    )
    mgsa_onlstm_chunk_size: int = field(
        default=2, metadata={"help": "ON-LSTM chunk size (neurons per master-gate level)"}
    )


def parse_mgsa_layers(spec: str, num_layers: int) -> List[int]:
    return parse_layers(spec, num_layers, "--mgsa-layers", "encoder")


class MGSATransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        self.mgsa_layer_ids = parse_mgsa_layers(cfg.mgsa_layers, len(self.layers))
        # the option parsed once, here: the layers and their attention get this value
        self.granularities = Granularities.parse(cfg.mgsa_granularities)
        place_layers(self, cfg, lambda i: MGSAEncoderLayer(cfg, self.granularities, return_fc=self.return_fc)
                     if i in self.mgsa_layer_ids else None)
        # phrase-tag supervision: p_i = softmax(W_t g_i + b_t) on the composed syntactic phrases
        num_tags = getattr(cfg, "mgsa_num_phrase_tags", 0) or 0
        has_syntax = self.granularities.tree_levels > 0
        self.phrase_tag_classifier = nn.Linear(cfg.encoder.embed_dim, num_tags) if has_syntax and num_tags else None

    def build_partitions(self, padding_mask: Tensor, src_phrase_lengths: Optional[Tensor],
                         src_phrase_counts: Optional[Tensor]) -> Dict[str, Partition]:
        """The partition of each phrase granularity (modules/mgsa/partition.py, build_partitions)."""
        return build_partitions(self.granularities, padding_mask, src_phrase_lengths, src_phrase_counts)

    def phrase_tag_logits(self, encoder_out) -> List[Tuple[Union[int, Tuple[int, ...]], Tensor, object]]:
        """The phrase-tag logits of every syntactic granularity of every MG-SA layer, as
        (tree level, B x P x tags, partition), or, for a layer's syntactic granularities
        classified at once (a block of the layer's ComposedPhrases, which is how the layers
        return them), (tree levels, Gs x B x P x tags, partitions)."""
        if self.phrase_tag_classifier is None:
            return []
        out = []
        for layer_composed in encoder_out["mgsa_composed"]:
            syntactic = [j for j, g in enumerate(layer_composed) if Granularity(g).kind == SYNTACTIC]
            if not syntactic:
                continue
            lo, hi = syntactic[0], syntactic[-1] + 1
            if isinstance(layer_composed, ComposedPhrases) and hi - lo == len(syntactic):
                phrases = layer_composed.phrases
                rows = phrases if (lo, hi) == (0, phrases.size(0)) else phrases[lo:hi]
                levels = tuple(Granularity(layer_composed.granularities[j]).size for j in syntactic)
                out.append((levels, self.phrase_tag_classifier(rows), layer_composed.partitions[lo:hi]))
                continue
            for g, (composed, partition) in layer_composed.items():
                if Granularity(g).kind == SYNTACTIC:
                    out.append((Granularity(g).size, self.phrase_tag_classifier(composed), partition))
        return out

    def forward(
        self,
        src_tokens: Tensor,
        src_lengths: Optional[Tensor] = None,
        return_all_hiddens: bool = False,
        token_embeddings: Optional[Tensor] = None,
        src_phrase_lengths: Optional[Tensor] = None,
        src_phrase_counts: Optional[Tensor] = None,
    ):
        """As TransformerEncoderBase.forward, plus the phrase partitions for MG-SA layers.

        The output dict also holds "mgsa_composed": for every MG-SA layer, the composed
        phrases G of each phrase granularity with their partition (a ComposedPhrases).
        """
        padding_mask = src_tokens.eq(self.padding_idx)  # B x T
        has_pads = bool(padding_mask.any())
        partitions = self.build_partitions(padding_mask, src_phrase_lengths, src_phrase_counts)

        x, encoder_embedding = self.forward_embedding(src_tokens, token_embeddings)
        if has_pads:
            x = x * (1 - padding_mask.unsqueeze(-1).type_as(x))
        x = x.transpose(0, 1)  # T x B x C

        encoder_states = [x] if return_all_hiddens else []
        composed = []
        layer_mask = padding_mask if has_pads else None
        mgsa_layers = [self.layers[i] for i in self.mgsa_layer_ids]
        # In training, --encoder-layerdrop's LayerDropModuleList yields only the layers it
        # keeps, so MG-SA layers are recognised by identity, not by their place in the loop.
        for layer in self.layers:
            if any(layer is m for m in mgsa_layers):
                # the layer returns (x, G of each phrase granularity): tensors at the top level,
                # so that --checkpoint-activations (fairseq's checkpoint_wrapper, which passes
                # nested outputs through without autograd) keeps L_tag's gradient path to x
                x, *phrases = layer(x, layer_mask, partitions)
                composed.append(ComposedPhrases(phrases[0] if phrases else None, self.granularities.phrase,
                                                [partitions[g] for g in self.granularities.phrase]))
            else:
                x = layer(x, encoder_padding_mask=layer_mask)
            if isinstance(x, tuple):  # return_fc layers
                x = x[0]
            if return_all_hiddens:
                encoder_states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)

        return {
            "encoder_out": [x],  # T x B x C
            "encoder_padding_mask": [padding_mask],  # B x T
            "encoder_embedding": [encoder_embedding],  # B x T x C
            "encoder_states": encoder_states,  # List[T x B x C]
            "fc_results": [],
            "src_tokens": [],
            "src_lengths": [(~padding_mask).sum(dim=1, dtype=torch.int32).reshape(-1, 1)],
            "mgsa_composed": composed,
        }


@register_model("mgsa_transformer")
class MGSATransformerModel(MethodTransformerModel):
    """Transformer with Multi-Granularity Self-Attention (Hao et al., EMNLP 2019) in its encoder."""

    CONFIG = MGSAConfig
    ENCODER = MGSATransformerEncoder

    @property
    def tree_levels(self) -> int:
        """How many tree levels this model reads (its syntactic heads need the phrase files'
        levels 1..tree_levels; 0: none): what the mgsa_translation task asks."""
        return self.encoder.granularities.tree_levels

    @classmethod
    def check_args(cls, args):
        Granularities.parse(args.mgsa_granularities).heads_per_group(args.encoder_attention_heads)
        parse_mgsa_layers(args.mgsa_layers, args.encoder_layers)

    @classmethod
    def build_model(cls, args, task):
        args = cls.as_namespace(args)
        tags = getattr(task, "tag_dictionary", None)
        # The tag count is part of the model's configuration: a checkpoint keeps it in its
        # model args and is built from it, whatever directory it is loaded with (a copy with
        # only the two dictionaries, for decoding); training takes it from the data.
        saved = getattr(args, "mgsa_num_phrase_tags", None)
        if saved is None:
            args.mgsa_num_phrase_tags = len(tags) if tags is not None else 0
        model = super().build_model(args, task)
        if model.tree_levels and not hasattr(task, "tag_dictionary"):
            raise MGSAError(f"this model has syntactic MG-SA heads ({args.mgsa_granularities}), which need the "
                            f"phrases of every source sentence: run it with --task mgsa_translation (task "
                            f"{type(task).__name__} cannot give them)")
        if model.tree_levels and saved and tags is not None and len(tags) != saved:
            raise MGSAError(f"the model was trained with {saved} phrase tags, but the tag dictionary of "
                            f"{getattr(task.cfg, 'data', 'the data')} has {len(tags)}: use the data directory "
                            f"the model was trained on, or binarize with mgsa-preprocess --tagdict "
                            f"{tag_dictionary_path('<that directory>', task.cfg.source_lang)}")
        return model

    @classmethod
    def hub_models(cls):
        return {}  # no published checkpoints (fairseq's map names its own transformers)

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        """As TransformerModel.from_pretrained, returning the hub interface that gives
        syntactic models their phrases (see fairseq_mgsa/hub_interface.py)."""
        from fairseq import hub_utils

        from ..hub_interface import MGSAHubInterface

        x = hub_utils.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path,
                                      archive_map=cls.hub_models(), **kwargs)
        return MGSAHubInterface(x["args"], x["task"], x["models"])

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer: Optional[int] = None,
                alignment_heads: Optional[int] = None, src_phrase_lengths: Optional[Tensor] = None,
                src_phrase_counts: Optional[Tensor] = None):
        """As TransformerModel.forward; the decoder's extra output also holds
        "phrase_tag_logits" (see MGSATransformerEncoder.phrase_tag_logits)."""
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
                                   src_phrase_lengths=src_phrase_lengths, src_phrase_counts=src_phrase_counts)
        decoder_out = self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                                   alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                                   src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
        decoder_out[1]["phrase_tag_logits"] = self.encoder.phrase_tag_logits(encoder_out)
        return decoder_out


# The paper's best configuration (its Table 3, row 6): word + top 3 tree levels,
# SAN composition, phrase-tag supervision, ON-LSTM interaction, encoder layer 1.
PAPER_SYNTACTIC = dict(mgsa_layers="1", mgsa_granularities="word,syn1,syn2,syn3",
                       mgsa_composition="san", mgsa_interaction="onlstm")


# At each of fairseq's sizes (base.SIZES; IWSLT: 4 heads, one per granularity), with the
# n-gram defaults and with the paper's full MG-SA.
for _size, _arch in SIZES.items():
    MGSATransformerModel.architecture(f"mgsa_transformer{_size}", _arch)
    MGSATransformerModel.architecture(f"mgsa_transformer{_size}_syntactic", _arch, PAPER_SYNTACTIC)
