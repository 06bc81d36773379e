"""The systems the plugin compares, one entry each: read by the demo, the training benchmark
(benchmarks/bench_training.py) and the recipes (`SYSTEM=...` in examples/).

A system is what a user picks: an architecture family at a size, the task that feeds it,
the criterion and its options, and the model options that make it that system. Sizes:
`base`, `big` and `iwslt` are registered fairseq architectures (the entry names one per
size); `tiny` and `cpu` are the base architecture with the dimensions of DIMS: `tiny` for
tests and quick benchmarks, `cpu` for training on one CPU core to convergence on a small
corpus in 15-30 minutes (examples/multi30k_en_de/README.md says why these dimensions). Training hyper-parameters (optimizer, learning rate, label smoothing,
dropout, batch) are not part of a system: the caller gives every system the same.

Adding a system is one entry in SYSTEMS below, and nothing else:

    System("pba_homogeneous_queryk", "PBA homogeneous QUERYK 1-2", sized("pba_transformer"),
           model_args=("--pba-attention", "queryk", "--pba-mode", "homogeneous", "--pba-ngrams", "1,2")),

`sized(family)` follows the plugin's naming of architectures (`X`, `X_big`,
`X_iwslt_de_en`); give a dict for others. `depth=N, depth_of=OTHER` makes OTHER with N layers
in the encoder and in the decoder where the architecture has 6 (base, big, iwslt), and the same
fraction of the layers at other dimensions (`scaled_layers`: tiny's and cpu's 3 layers become 5
for N = 10, 2 for N = 4). A system that reads phrase files sets
`needs_trees=True` (and the `mgsa_translation` task).

This file imports nothing from the package or fairseq, so shell scripts can read it
without importing fairseq (about 3 s): `python "$(mgsa-user-dir)/systems.py" ...`, the same
as `python -m fairseq_mgsa.systems ...`:

    python -m fairseq_mgsa.systems                         # the table of systems
    python -m fairseq_mgsa.systems args mgsa_syntactic --size big    # its fairseq-train options
    python -m fairseq_mgsa.systems get mgsa_syntactic task           # one field
    python -m fairseq_mgsa.systems needs-trees transformer mgsa_ngram   # yes if any needs trees
"""

import argparse
import shlex
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

SIZES = ("tiny", "cpu", "base", "big", "iwslt")


def dims(layers: int, d: int, ffn: int, heads: int) -> Tuple[str, ...]:
    return ("--encoder-layers", str(layers), "--decoder-layers", str(layers),
            "--encoder-embed-dim", str(d), "--decoder-embed-dim", str(d),
            "--encoder-ffn-embed-dim", str(ffn), "--decoder-ffn-embed-dim", str(ffn),
            "--encoder-attention-heads", str(heads), "--decoder-attention-heads", str(heads))


# Sizes that are the base architecture with other dimensions; 4 heads: MG-SA has one word head
# and one per granularity.
DIMS = {"tiny": dims(3, 128, 256, 4), "cpu": dims(3, 128, 512, 4)}
TINY_ARGS = DIMS["tiny"]
BASELINE = "transformer"
PAPER_LAYERS = 6  # the layers of every registered architecture (base, big, iwslt), encoder and decoder


def scaled_layers(layers: int, depth: int) -> int:
    """A depth variant's layers at dimensions of `layers` layers: depth / 6 of them, rounded, at least 1."""
    return max(1, round(layers * depth / PAPER_LAYERS))


def sized(family: str, suffix: str = "") -> Dict[str, str]:
    """The plugin's architecture names of `family` by size: `family`, `family_big`,
    `family_iwslt_de_en` (+ `suffix`, e.g. `_syntactic`)."""
    return {"base": family + suffix, "big": f"{family}_big{suffix}", "iwslt": f"{family}_iwslt_de_en{suffix}"}


@dataclass(frozen=True)
class System:
    name: str                # the key: SYSTEM=name, --systems name,...
    label: str               # for tables and plots
    archs: Dict[str, str]    # size (base, big, iwslt) -> registered architecture
    task: str = "translation"
    criterion: str = "label_smoothed_cross_entropy"
    criterion_args: Tuple[str, ...] = ()
    model_args: Tuple[str, ...] = ()   # model options on top of the architecture's
    size_args: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # size -> options after the size's dims
    needs_trees: bool = False          # reads phrase files (mgsa-preprocess with trees)
    depth: int = 0                     # layers per stack at base, big and iwslt (0: the architecture's 6)
    depth_of: str = ""                 # with depth: the system this one is at another depth
    notes: str = ""

    def __post_init__(self):
        missing = [s for s in SIZES if s not in DIMS and s not in self.archs]
        if missing:
            raise ValueError(f"system {self.name}: no architecture for size {', '.join(missing)}")
        if self.needs_trees and self.task != "mgsa_translation":
            raise ValueError(f"system {self.name}: phrase files are read by the mgsa_translation task")
        if self.depth < 0 or bool(self.depth) != bool(self.depth_of):
            raise ValueError(f"system {self.name}: a depth variant gives its depth (a number of layers) and the "
                             f"system it varies (depth_of)")

    def arch(self, size: str) -> str:
        check_size(size)
        return self.archs["base" if size in DIMS else size]

    def train_args(self, size: str) -> List[str]:
        """The fairseq-train options that make this system at `size` (the rest, data and
        hyper-parameters, is the caller's)."""
        size_dims = DIMS.get(size, ())
        if size_dims and self.depth:  # its layers in place of the size's (DIMS start with the two layer options)
            size_dims = (*self.layer_args(int(size_dims[1])), *size_dims[4:])
        return ["--task", self.task, "--arch", self.arch(size), *size_dims, *self.size_args.get(size, ()),
                *(() if size in DIMS else self.layer_args(PAPER_LAYERS)),
                *self.model_args, "--criterion", self.criterion, *self.criterion_args]

    def layer_args(self, layers: int) -> Tuple[str, ...]:
        """The layer options of a depth variant at dimensions of `layers` layers (nothing for the others)."""
        if not self.depth:
            return ()
        n = str(scaled_layers(layers, self.depth))
        return ("--encoder-layers", n, "--decoder-layers", n)

    def generate_args(self) -> List[str]:
        """The fairseq-generate options this system needs (the checkpoint holds the rest)."""
        return ["--task", self.task]


SYSTEMS: Dict[str, System] = {s.name: s for s in (
    System("transformer", "Transformer (fairseq)",
           {"base": "transformer", "big": "transformer_vaswani_wmt_en_de_big", "iwslt": "transformer_iwslt_de_en"},
           notes="the baseline"),
    # dimensions from `python -m fairseq_mgsa.analysis.compare.matched --size SIZE` (built models'
    # parameters; tests/fairseq_mgsa/test_systems.py checks them); the demo computes its own for its
    # dimensions. The Transformer's shape scaled up, not its FFN alone: 3.3 times wider under
    # post-norm it stalled at the check's learning rate (docs/compare.md)
    System("transformer_matched", "Transformer, parameter-matched to PBA interleaved QUERYK",
           {"base": "transformer", "big": "transformer_vaswani_wmt_en_de_big", "iwslt": "transformer_iwslt_de_en"},
           size_args={size: dims(*layers_dims)[4:] for size, layers_dims in (
               ("tiny", (3, 192, 640, 6)), ("cpu", (3, 192, 832, 6)), ("base", (6, 768, 3264, 12)),
               ("big", (6, 1536, 6464, 24)), ("iwslt", (6, 768, 2560, 6)))},
           notes="the baseline scaled up (model dimension, heads, FFN): within 5% of pba_interleaved_queryk's "
                 "parameters (docs/compare.md, a parameter-matched baseline)"),
    System("mgsa_ngram", "MG-SA n-gram", sized("mgsa_transformer"),
           notes="word,ngram2,ngram3,ngram4 heads, SAN composition, layer 1"),
    System("mgsa_ngram_onlstm", "MG-SA n-gram + ON-LSTM", sized("mgsa_transformer"),
           model_args=("--mgsa-interaction", "onlstm"),
           notes="n-gram heads, SAN composition, ON-LSTM interaction, layer 1"),
    System("mgsa_syntactic", "MG-SA syntactic (paper default)", sized("mgsa_transformer", "_syntactic"),
           task="mgsa_translation", criterion="label_smoothed_cross_entropy_with_phrase_tags",
           criterion_args=("--phrase-tag-weight", "0.001"), needs_trees=True,
           notes="word,syn1,syn2,syn3 heads, SAN composition, ON-LSTM, layer 1, + 0.001 L_tag"),
    System("pba_heterogeneous_convkv", "PBA heterogeneous CONVKV 1-2",
           sized("pba_transformer_heterogeneous_convkv"),
           notes="phrase-based attention: unigram + bigram blocks, in encoder, decoder and cross attention"),
    System("pba_heterogeneous_queryk", "PBA heterogeneous QUERYK 1-2",
           sized("pba_transformer_heterogeneous_queryk"), notes="query as convolution kernel, unigram + bigram"),
    System("pba_homogeneous_convkv", "PBA homogeneous CONVKV 1-2",
           sized("pba_transformer_homogeneous_convkv"), notes="half the heads unigram, half bigram"),
    System("pba_interleaved_queryk", "PBA interleaved QUERYK 1-2",
           sized("pba_transformer_interleaved_queryk"), notes="the paper's best row"),
    System("hysan", "HySAN (gate)", sized("hysan_transformer", "_recommended"),
           notes="encoder global,forward,backward,local2; decoder global,local2; squeeze gate; every layer"),
    # the phrase-based attention paper's depth baselines (its Table 2): more Transformer layers
    # for the parameters phrasal attention adds, and phrasal attention with fewer layers
    System("transformer_10layer", "Transformer, 10 layers",
           {"base": "transformer", "big": "transformer_vaswani_wmt_en_de_big", "iwslt": "transformer_iwslt_de_en"},
           depth=10, depth_of="transformer",
           notes="the baseline with 10 encoder and 10 decoder layers: the phrase-based attention paper's "
                 "depth baseline (91M parameters there, 6+6 layers 63M)"),
    System("pba_heterogeneous_convkv_4layer", "PBA heterogeneous CONVKV 1-2, 4 layers",
           sized("pba_transformer_heterogeneous_convkv"), depth=4, depth_of="pba_heterogeneous_convkv",
           notes="pba_heterogeneous_convkv with 4 encoder and 4 decoder layers: fewer parameters than the "
                 "Transformer base (60M in the paper)"),
    # Shaw et al.'s relative rows: relative positions instead of the sinusoids (fairseq's own option)
    System("transformer_relative", "Transformer, relative positions (k = 16)", sized("relative_transformer"),
           model_args=("--max-relative-positions", "16", "--no-token-positional-embeddings"),
           notes="Shaw et al.: learned relative key and value embeddings, clip 16, encoder and decoder "
                 "self-attention, no absolute positions"),
    System("hysan_relative", "HySAN (gate), relative positions (k = 16)", sized("hysan_transformer", "_recommended"),
           model_args=("--max-relative-positions", "16", "--no-token-positional-embeddings"),
           notes="hysan with Shaw et al.'s relative positions in every self-attention, no absolute positions"),
)}


class UnknownSystem(ValueError):
    pass


def check_size(size: str):
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; sizes: {', '.join(SIZES)}")


def get(name: str) -> System:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise UnknownSystem(f"unknown system {name!r}; registered: {', '.join(SYSTEMS)}") from None


def select(names) -> List[System]:
    """Systems by name (a comma- or space-separated string, or a list); all when empty."""
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    return [get(n) for n in names] if names else list(SYSTEMS.values())


def distinct_models() -> List[System]:
    """The systems but the depth variants. At dimensions that fix the layers (the tests' TINY, a
    benchmark's), a depth variant builds the very model of the system it varies: checks run
    there (invariants, commands, checkpoints) need it once, under the other's name."""
    return [s for s in SYSTEMS.values() if not s.depth_of]


def table() -> str:
    rows = [("name", "label", "task", "trees", "base arch", "model options", "criterion")]
    for s in SYSTEMS.values():
        rows.append((s.name, s.label, s.task, "yes" if s.needs_trees else "no", s.archs["base"],
                     " ".join((*s.size_args.get("base", ()), *s.layer_args(PAPER_LAYERS), *s.model_args)) or "-",
                     " ".join((s.criterion, *s.criterion_args))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m fairseq_mgsa.systems",
                                description="The registered systems (fairseq_mgsa/systems.py).")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("list", help="the table of systems (the default)")
    n = sub.add_parser("names", help="the names, one a line")
    n.add_argument("--distinct", action="store_true", help="without the depth variants (distinct_models)")
    a = sub.add_parser("args", help="fairseq-train options of a system, shell-quoted on one line")
    a.add_argument("name")
    a.add_argument("--size", default="base", choices=SIZES)
    a.add_argument("--lines", action="store_true", help="one option a line (for bash's mapfile)")
    g = sub.add_parser("get", help="one field of a system (name, label, task, arch, criterion, needs_trees)")
    g.add_argument("name")
    g.add_argument("field", choices=["name", "label", "task", "arch", "criterion", "needs_trees", "notes"])
    g.add_argument("--size", default="base", choices=SIZES)
    t = sub.add_parser("needs-trees", help="yes if any of the systems reads phrase files, else no")
    t.add_argument("names", nargs="+")
    args = p.parse_args(argv)
    try:
        if args.command in (None, "list"):
            print(table())
        elif args.command == "names":
            print("\n".join(s.name for s in (distinct_models() if args.distinct else SYSTEMS.values())))
        elif args.command == "args":
            opts = get(args.name).train_args(args.size)
            print("\n".join(opts) if args.lines else shlex.join(opts))
        elif args.command == "get":
            s = get(args.name)
            value = s.arch(args.size) if args.field == "arch" else getattr(s, args.field)
            print(str(value).lower() if isinstance(value, bool) else value)
        elif args.command == "needs-trees":
            print("yes" if any(s.needs_trees for s in select(args.names)) else "no")
    except ValueError as e:
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
