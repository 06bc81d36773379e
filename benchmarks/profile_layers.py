#!/usr/bin/env python
"""Where an MG-SA encoder layer's time goes, against fairseq's own encoder layer, on one batch.

For each model (an MG-SA architecture) and batch size, the script builds the MG-SA encoder
layer and fairseq's TransformerEncoderLayerBase at the same size, feeds both the same input
(T x B x C, left padded as fairseq pads sources) and measures one forward + backward:

* torch.profiler events: every recorded event, the aten ops among them, the leaf aten ops
  (ops that call no other: about the kernels a GPU would launch) and the host syncs
  (aten::_local_scalar_dense: .item(), int(t), bool(t));
* CPU time, paired: the layers run back to back, --iters times, in rotating order; the
  median of each and the median of the per-round speed ratio (baseline ms / MG-SA ms) are
  kept. The same for the self-attention alone (MG-SA attention against fairseq's
  MultiheadAttention).

The MG-SA layer is measured twice: as it runs here ("after": on a CPU the phrase
composition runs granularity by granularity) and in the layout it takes on a GPU ("after,
GPU layout": every granularity composed in one set of operations; see
fairseq_mgsa/modules/mgsa/composition.py). The second is the operation count a launch-bound
device sees; its CPU time shows why a CPU does not take it.

With --before DIR (a checkout of an earlier version, e.g. `git worktree add` or `git archive`
of main), that version's MG-SA layer is measured in the same run, in the same rotation: the
"before" and "after" figures then share the machine's state, which matters on a loaded
machine. Its modules are imported from DIR/fairseq_mgsa/modules under another package name
(the package's __init__, which registers models with fairseq, is not run).

The batch is drawn from the project's grammar (preprocess/synthetic.py): gold trees give
the syntactic phrase levels (preprocess/partition.py, top 3 levels), one token per word, as
the training benchmark's corpus (`--subword-style none`); n-gram models use the same tokens.
The backward pass of the MG-SA layer also carries the composed phrases' gradient (a sum of
them stands in for the phrase-tag loss), as in training.

Only the layers' public constructors and forward signatures are used.

    git archive main fairseq_mgsa | tar -x -C /tmp/main
    python -m benchmarks.profile_mgsa_layer --before /tmp/main

Results go to benchmarks/runs/mgsa_layer_profile.json (or --out; the committed results:
--out docs/results/mgsa_layer_profile.json).
"""

import argparse
import datetime
import os
import statistics
import sys
from collections.abc import Mapping

import torch

from benchmarks.run_outputs import default_out, write_json
from benchmarks.training.timing import clock, interleaved, speed_ratios

MODELS = {"syntactic": "mgsa_transformer_syntactic", "ngram": "mgsa_transformer"}


def layer_config(arch):
    import fairseq_mgsa  # noqa: F401  (registers the architectures)
    from fairseq.models import ARCH_CONFIG_REGISTRY
    from fairseq.models.transformer import TransformerConfig
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](args)
    return TransformerConfig.from_namespace(args)


def grammar_batch(batch_size, seed, sentences_per_line, levels=3):
    """(padding mask B x T, phrase lengths L x B x M, phrase counts L x B) from gold trees."""
    from mgsa_preprocess.partition import partition
    from mgsa_preprocess.synthetic import generate
    from mgsa_preprocess.trees import parse_tree

    spans, lengths = [], []
    for _, _, tree in generate(batch_size, seed, sentences_per_line):
        top, leaves = parse_tree(tree)
        spans.append([[node[2] - node[1] for node in level] for level in partition(top, levels)])
        lengths.append(len(leaves) + 1)  # + end of sentence
    T, M = max(lengths), max(len(level) for s in spans for level in s)
    mask = torch.ones(batch_size, T, dtype=torch.bool)
    phrase_lengths = torch.zeros(levels, batch_size, M, dtype=torch.long)
    counts = torch.zeros(levels, batch_size, dtype=torch.long)
    for b, (n, s) in enumerate(zip(lengths, spans)):
        mask[b, T - n:] = False  # left padding, fairseq's default for sources
        for lv, level in enumerate(s):
            phrase_lengths[lv, b, :len(level)] = torch.tensor(level)
            counts[lv, b] = len(level)
    return mask, phrase_lengths, counts


def op_counts(step):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step()
    events = prof.events()
    aten = [e for e in events if e.name.startswith("aten::")]
    return {
        "profiler events": len(events),
        "aten ops": len(aten),
        "leaf aten ops": sum(1 for e in aten if not e.cpu_children),
        "host syncs": sum(1 for e in aten if e.name == "aten::_local_scalar_dense"),
    }


def paired_times(steps, iters):
    """Median ms of every step, run back to back in rotating order (timing.interleaved), and the
    median of its per-round speed ratio against the first step, the baseline."""
    for step in steps:
        step()  # warmup
    times = interleaved(lambda k, _: 1000 * clock(steps[k]), range(len(steps)), range(iters))
    return [(statistics.median(t), statistics.median(speed_ratios(t, times[0]))) for t in times.values()]


def load_before(root):
    """The MG-SA encoder layer of an earlier checkout, under the package name fairseq_mgsa_before."""
    import importlib
    import types
    name = "fairseq_mgsa_before"
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(os.path.abspath(root), "fairseq_mgsa")]
    sys.modules[name] = pkg
    return importlib.import_module(name + ".modules.mgsa_encoder_layer").MGSAEncoderLayer


def profile(model, batch_size, a, before_layer=None):
    import inspect

    from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
    from fairseq_mgsa.modules.mgsa.granularities import Granularities
    from fairseq_mgsa.modules.mgsa.encoder_layer import MGSAEncoderLayer
    from fairseq_mgsa.modules.mgsa.partition import build_partitions

    cfg = layer_config(MODELS[model])
    granularities = Granularities.parse(cfg.mgsa_granularities)  # as the MG-SA encoder parses it
    layers = {}
    for label, cls in (("baseline", TransformerEncoderLayerBase), ("after", MGSAEncoderLayer),
                       ("after, GPU layout", MGSAEncoderLayer), ("before", before_layer)):
        if cls is not None:
            torch.manual_seed(a.seed)
            # versions before the parsed granularities were handed to the layer built it from cfg alone
            takes_granularities = "granularities" in inspect.signature(cls).parameters
            layers[label] = (cls(cfg, granularities) if takes_granularities else cls(cfg)).train()
    # the composition layout a GPU takes (every granularity at once), measured here too
    layers["after, GPU layout"].self_attn.phrase_memory.compose_all_at_once = True
    mask, phrase_lengths, counts = grammar_batch(batch_size, a.seed, a.sentences_per_line)
    partitions = build_partitions(granularities, mask, phrase_lengths, counts)
    x = torch.randn(mask.size(1), batch_size, cfg.encoder.embed_dim, requires_grad=True)

    def backward(out, *phrases):
        # the layer returns (x, G_1, .., G_n); versions before the tuple return returned
        # (x, {granularity: (G, partition)})
        if len(phrases) == 1 and isinstance(phrases[0], Mapping):
            phrases = [g for g, _ in phrases[0].values()]
        loss = out.sum() + sum(g.sum() for g in phrases)
        loss.backward()

    def steps(label, part):
        layer = layers[label]
        if label == "baseline":
            if part == "layer":
                return lambda: layer(x, encoder_padding_mask=mask).sum().backward()
            return lambda: layer.self_attn(query=x, key=x, value=x, key_padding_mask=mask,
                                           need_weights=False)[0].sum().backward()
        if part == "layer":
            return lambda: backward(*layer(x, mask, partitions))
        return lambda: backward(*layer.self_attn(x, key_padding_mask=mask, partitions=partitions))

    row = {"tokens (B x T)": f"{batch_size}x{mask.size(1)}",
           "phrases per sentence (mean, per granularity)": {
               g: round(float(p.num_phrases.float().mean()), 2) for g, p in partitions.items()}}
    for part in ("layer", "self-attention"):
        labels = list(layers)
        fns = [steps(label, part) for label in labels]
        timed = paired_times(fns, a.iters)
        row[part] = {label: {"ops": op_counts(fn), "ms (median)": round(ms, 3),
                             "speed ratio vs baseline (paired median)": round(ratio, 3)}
                     for label, fn, (ms, ratio) in zip(labels, fns, timed)}
    return row


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", metavar="DIR", help="also measure the MG-SA layer of the checkout in DIR")
    p.add_argument("--models", default="syntactic,ngram", help=f"comma-separated, of {','.join(MODELS)}")
    p.add_argument("--batch-sizes", default="8,64")
    p.add_argument("--iters", type=int, default=20, help="timed forward + backward passes per layer")
    p.add_argument("--sentences-per-line", type=int, default=1,
                   help="grammar sentences per line (2-3 give WMT-like lengths)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--out", default=default_out("mgsa_layer_profile.json"),
                   help="JSON output (default benchmarks/runs/mgsa_layer_profile.json)")
    return p


def main(argv=None):
    a = get_parser().parse_args(argv)
    torch.set_num_threads(a.threads)
    import fairseq_mgsa
    before = load_before(a.before) if a.before else None
    run = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "code": {"after": os.path.dirname(os.path.abspath(fairseq_mgsa.__file__)),
                    "before": os.path.abspath(a.before) if a.before else None},
           "torch": torch.__version__, "threads": a.threads, "iters": a.iters,
           "sentences per line": a.sentences_per_line, "load average at start": os.getloadavg(),
           "results": {}}
    for model in a.models.split(","):
        for bs in (int(s) for s in a.batch_sizes.split(",")):
            row = profile(model, bs, a, before)
            run["results"].setdefault(model, {})[f"batch {bs}"] = row
            for part in ("layer", "self-attention"):
                print(f"{model} B={bs} {part}: " + "; ".join(
                    f"{label} {r['ops']['profiler events']} events, {r['ops']['host syncs']} syncs, "
                    f"{r['ms (median)']} ms, speed {r['speed ratio vs baseline (paired median)']}"
                    for label, r in row[part].items()), flush=True)
    run["load average at end"] = os.getloadavg()
    write_json(a.out, run, indent=1)


if __name__ == "__main__":
    sys.exit(main())
