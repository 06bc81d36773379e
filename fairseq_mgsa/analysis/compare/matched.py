"""The parameter-matched baseline: fairseq's Transformer with a wider FFN, so that a built
model has the parameters of a peer (docs/compare.md: part of a peer's gain may be capacity).

Matching counts the parameters of built models (on torch's meta device: no memory, no
initialisation cost) without the token embeddings, which both share: the totals then
agree within 5% at any vocabulary size. The registry (fairseq_mgsa/systems.py) holds the
widths this gives at its sizes; the demo calls matched_args for its own small dimensions.

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


def matched_args(baseline_args: Sequence[str], peer_args: Sequence[str]) -> List[str]:
    """FFN widths (encoder and decoder) that give the baseline the peer's parameters. Every
    layer's FFN has 2 d f + f + d parameters: the width follows from the two built counts."""
    from fairseq import options
    from fairseq_mgsa.user_dir import path as user_dir

    base_args = model_args(baseline_args)
    args = options.parse_args_and_arch(options.get_training_parser(),
                                       ["unused-data", "--user-dir", user_dir(), *base_args])
    layers = args.encoder_layers + args.decoder_layers
    d, f = args.encoder_embed_dim, args.encoder_ffn_embed_dim
    gap = count_params(model_args(peer_args))[1] - count_params(base_args)[1]
    width = max(f, f + round(gap / (layers * (2 * d + 1)) / MULTIPLE) * MULTIPLE)
    return ["--encoder-ffn-embed-dim", str(width), "--decoder-ffn-embed-dim", str(width)]


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
