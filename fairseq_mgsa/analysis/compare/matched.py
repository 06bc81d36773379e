"""The parameter-matched baseline: fairseq's Transformer scaled up, the shape kept (the FFN ratio,
the head dimension, the layers), so that a built model has the parameters of a peer
(docs/compare.md: part of a peer's gain may be capacity).

Matching counts the parameters of built models (on torch's meta device: no memory, no
initialisation cost) without the token embeddings (a lookup, no arithmetic: the count scaling
studies use); the matched model's embeddings are wider by the added width times the dictionary's
size (at base with the grammar's dictionary of about 100 words, the whole models agree within 1%;
with 32,000 words the matched one has 7% more). The
registry (fairseq_mgsa/systems.py) holds the dimensions this gives at its sizes; the demo calls
matched_args for its own small dimensions.

    python -m fairseq_mgsa.analysis.compare.matched --size base    # the options, and the counts
"""

import argparse
from typing import List, Sequence, Tuple

PEER = "pba_interleaved_queryk"  # the largest phrase-based attention preset at every size
MULTIPLE = 64  # FFN widths rounded to a multiple of 64 (as fairseq's own sizes)


def count_params(train_args: Sequence[str], vocab: int = 1000) -> Tuple[int, int]:
    """(all, without token embeddings) parameters of the model `train_args` builds, with a
    joined dictionary of `vocab` words and shared embeddings."""
    import torch
    from fairseq import options
    from fairseq.data import Dictionary
    from fairseq.tasks.translation import TranslationTask
    from fairseq_mgsa.user_dir import path as user_dir

    args = options.parse_args_and_arch(options.get_training_parser(), [
        "unused-data", "--user-dir", user_dir(), "--task", "translation", *train_args, "--share-all-embeddings"])
    d = Dictionary()
    for i in range(vocab):
        d.add_symbol(f"w{i}")
    with torch.device("meta"):
        model = TranslationTask(args, d, d).build_model(args)
    total = sum(p.numel() for p in model.parameters())
    embed = sum(p.numel() for n, p in model.named_parameters() if "embed_tokens" in n)
    return total, total - embed


def model_args(train_args: Sequence[str]) -> List[str]:
    """`train_args` without --task/--criterion and their values (a model's options only)."""
    out, skip = [], False
    for a in train_args:
        if skip:
            skip = False
        elif a in ("--task", "--criterion"):
            skip = True
        else:
            out.append(a)
    return out


def dims_args(d: int, ffn: int, heads: int) -> List[str]:
    return ["--encoder-embed-dim", str(d), "--decoder-embed-dim", str(d),
            "--encoder-ffn-embed-dim", str(ffn), "--decoder-ffn-embed-dim", str(ffn),
            "--encoder-attention-heads", str(heads), "--decoder-attention-heads", str(heads)]


def matched_args(baseline_args: Sequence[str], peer_args: Sequence[str]) -> List[str]:
    """The baseline's shape scaled up to the peer's parameters, layers as they are: the largest
    model dimension (a multiple of the baseline's head dimension, the heads growing with it)
    whose model, at the baseline's FFN ratio, stays within the peer's parameters, then the FFN
    widened by what is left (a multiple of 64; every layer's FFN has 2 d f + f + d parameters).
    Not the FFN alone: widened 3.3 times under post-norm at the base Transformer's learning rate,
    it stalled (docs/compare.md). Counts of built models decide."""
    from fairseq import options
    from fairseq_mgsa.user_dir import path as user_dir

    base_args = model_args(baseline_args)
    args = options.parse_args_and_arch(options.get_training_parser(),
                                       ["unused-data", "--user-dir", user_dir(), *base_args])
    layers = args.encoder_layers + args.decoder_layers
    d, f, heads = args.encoder_embed_dim, args.encoder_ffn_embed_dim, args.encoder_attention_heads
    head_dim = d // heads
    target = count_params(model_args(peer_args))[1]

    def params(width, ffn):
        return count_params(base_args + dims_args(width, ffn, width // head_dim))[1]

    width = d
    while params(width + head_dim, (width + head_dim) * f // d) <= target:
        width += head_dim
    ffn = width * f // d
    gap = target - params(width, ffn)
    ffn += max(0, round(gap / (layers * (2 * width + 1)) / MULTIPLE) * MULTIPLE)
    return dims_args(width, ffn, width // head_dim)


def main(argv=None):
    from fairseq_mgsa import systems
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", default="base", choices=systems.SIZES)
    p.add_argument("--peer", default=PEER)
    a = p.parse_args(argv)
    base = systems.get(systems.BASELINE).train_args(a.size)
    peer = systems.get(a.peer).train_args(a.size)
    opts = matched_args(base, peer)
    print(" ".join(opts))
    for name, args in (("baseline", base), ("matched", base + opts), (a.peer, peer)):
        print(f"{name}: {count_params(model_args(args))[0]:,} parameters")


if __name__ == "__main__":
    main()
