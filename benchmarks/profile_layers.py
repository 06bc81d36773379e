"""Where a method's layer or module spends its time, against fairseq's counterpart on the same input.

Two methods, one sub-command each:

* mgsa: the MG-SA encoder layer (and its self-attention) against fairseq's encoder layer
  (MultiheadAttention), per MG-SA architecture and batch size, on a batch from the grammar's
  gold trees; the layer also in the layout it takes on a GPU ("after, GPU layout");
* pba: every phrase-based attention preset against MultiheadAttention, a training step of the
  encoder and the decoder self-attention and an incremental decoding step at beam search.

Both count torch.profiler events and leaf aten ops of one step and time the steps paired
(benchmarks/timing.py's paired_ms). With --before DIR (an earlier checkout: `git archive main
fairseq_mgsa | tar -x -C /tmp/main`) that version's module is measured in the same rotation. What
each measures and found: docs/benchmarks.md (the MG-SA layer) and docs/benchmarks-pba.md.

    python -m benchmarks.profile_layers mgsa --before /tmp/main
    python -m benchmarks.profile_layers pba --before /tmp/main --ops 12

Writes benchmarks/runs/mgsa_layer_profile.json or pba_profile.json (or --out).
"""

import argparse
import datetime
import importlib
import os
import shlex
import statistics
import sys
import types
from collections.abc import Mapping

import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.run_outputs import default_out, write_json
from benchmarks.timing import paired_ms, speed_ratios

MODELS = {"syntactic": "mgsa_transformer_syntactic", "ngram": "mgsa_transformer"}
PRESETS = ["heterogeneous_convkv", "heterogeneous_queryk", "homogeneous_convkv", "homogeneous_queryk",
           "interleaved_convkv", "interleaved_queryk"]


def load_before(root, module, name):
    """Class `name` of `module` (under fairseq_mgsa) of an earlier checkout, under the package
    name fairseq_mgsa_before."""
    pkg = types.ModuleType("fairseq_mgsa_before")
    pkg.__path__ = [os.path.join(os.path.abspath(root), "fairseq_mgsa")]
    sys.modules[pkg.__name__] = pkg
    return getattr(importlib.import_module(f"{pkg.__name__}.{module}"), name)


def timed(steps, iters):
    """[(median ms, the per-round speed ratios against steps[0], sorted)] of every step."""
    times = paired_ms(steps, iters)
    return [(statistics.median(t), sorted(speed_ratios(t, times[0]))) for t in times.values()]


def profiled(step, memory=False):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=memory) as prof:
        step()
    return prof


def leaf_ops(events):
    """Aten ops that call no other: about the kernels a GPU would launch."""
    return sum(1 for e in events if e.name.startswith("aten::") and not e.cpu_children)


# ---------------------------------------------------------------- mgsa: the MG-SA encoder layer

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


def layer_setup(cls, cfg, batch):
    """(the layer of `cls`, its partitions of the batch), both made by the package `cls` comes from,
    so that a --before checkout's layer gets its own granularities."""
    package = cls.__module__.rpartition(".")[0]
    Granularities = importlib.import_module(package + ".granularities").Granularities
    granularities = Granularities.parse(cfg.mgsa_granularities)  # as the MG-SA encoder parses it
    build_partitions = importlib.import_module(package + ".partition").build_partitions
    return cls(cfg, granularities).train(), build_partitions(granularities, *batch)


def profile_layer(model, batch_size, a, before_layer=None):
    from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
    from fairseq_mgsa.modules.mgsa.encoder_layer import MGSAEncoderLayer

    cfg = layer_config(MODELS[model])
    batch = grammar_batch(batch_size, a.seed, a.sentences_per_line)
    mask = batch[0]
    torch.manual_seed(a.seed)
    layers = {"baseline": (TransformerEncoderLayerBase(cfg).train(), None)}
    for label, cls in (("after", MGSAEncoderLayer), ("after, GPU layout", MGSAEncoderLayer), ("before", before_layer)):
        if cls is not None:
            torch.manual_seed(a.seed)
            layers[label] = layer_setup(cls, cfg, batch)
    # the composition layout a GPU takes (every granularity at once), measured here too
    layers["after, GPU layout"][0].self_attn.phrase_memory.compose_all_at_once = True
    x = torch.randn(mask.size(1), batch_size, cfg.encoder.embed_dim, requires_grad=True)

    def backward(out, *phrases):
        # the layer returns (x, {granularity: (G, partition)}), its self-attention (x, G_1, .., G_n)
        if len(phrases) == 1 and isinstance(phrases[0], Mapping):
            phrases = [g for g, _ in phrases[0].values()]
        loss = out.sum() + sum(g.sum() for g in phrases)  # the composed phrases' gradient, as the tag loss's
        loss.backward()

    def step(label, part):
        layer, partitions = layers[label]
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
               g: round(float(p.num_phrases.float().mean()), 2) for g, p in layers["after"][1].items()}}
    for part in ("layer", "self-attention"):
        labels = list(layers)
        steps = [step(label, part) for label in labels]
        row[part] = {}
        for label, fn, (ms, ratios) in zip(labels, steps, timed(steps, a.iters)):
            events = profiled(fn).events()
            aten = [e for e in events if e.name.startswith("aten::")]
            ops = {"profiler events": len(events), "aten ops": len(aten), "leaf aten ops": leaf_ops(aten),
                   "host syncs": sum(1 for e in aten if e.name == "aten::_local_scalar_dense")}  # .item(), int(t)
            row[part][label] = {"ops": ops, "ms (median)": round(ms, 3),
                                "speed ratio vs baseline (paired median)": round(statistics.median(ratios), 3)}
    return row


def run_mgsa(a, run):
    before = load_before(a.before, "modules.mgsa.encoder_layer", "MGSAEncoderLayer") if a.before else None
    run.update({"threads": a.threads, "iters": a.iters, "sentences per line": a.sentences_per_line})
    for model in a.models.split(","):
        for bs in (int(s) for s in a.batch_sizes.split(",")):
            row = run["results"].setdefault(model, {})[f"batch {bs}"] = profile_layer(model, bs, a, before)
            for part in ("layer", "self-attention"):
                print(f"{model} B={bs} {part}: " + "; ".join(
                    f"{label} {r['ops']['profiler events']} events, {r['ops']['host syncs']} syncs, "
                    f"{r['ms (median)']} ms, speed {r['speed ratio vs baseline (paired median)']}"
                    for label, r in row[part].items()), flush=True)


# ---------------------------------------------------------------- pba: phrase-based attention

def build(cls, preset, role, d, heads, seed):
    from fairseq.modules import MultiheadAttention
    torch.manual_seed(seed)
    if cls is None:
        return MultiheadAttention(d, heads, self_attention=role != "cross",
                                  encoder_decoder_attention=role == "cross", dropout=0.1)
    mode, attention = preset.split("_")
    return cls(d, heads, dropout=0.1, attention=attention, mode=mode, ngrams=[1, 2], role=role)


def training_step(m, role, x, pad):
    """Forward + backward of one module: x T x B x d, pad B x T (True = pad)."""
    T = x.size(0)
    mask = torch.triu(x.new_full((T, T), float("-inf")), 1) if role == "dec" else None

    def step():
        out, _ = m(x, x, x, key_padding_mask=pad, attn_mask=mask, need_weights=False)
        out.sum().backward()
    return step


def decoding_step(mods, x_prefix, enc, enc_pad, beam, seed):
    """One incremental step (self + cross) at position len(x_prefix), after the earlier steps
    ran once to fill the state. Returns a step that restores that state before each call, so
    every call does the same work (fairseq's per-step work: attention + the beam reorder)."""
    self_attn, cross = mods
    rows = x_prefix.size(1)
    g = torch.Generator().manual_seed(seed)
    for m in mods:
        if hasattr(m, "set_beam_size"):
            m.set_beam_size(beam)
    state = {}
    with torch.no_grad():
        for t in range(x_prefix.size(0) - 1):
            xt = x_prefix[t:t + 1]
            self_attn(xt, xt, xt, incremental_state=state, need_weights=False)
            cross(xt, enc, enc, key_padding_mask=enc_pad, incremental_state=state, static_kv=True,
                  need_weights=False)
    saved = {k: dict(v) for k, v in state.items()}
    # a reorder within each sentence's beam (beam search never mixes sentences)
    order = (torch.arange(rows) // beam) * beam + torch.randint(0, beam, (rows,), generator=g)
    xt = x_prefix[-1:]

    def step():
        st = {k: dict(v) for k, v in saved.items()}
        with torch.no_grad():
            self_attn(xt, xt, xt, incremental_state=st, need_weights=False)
            cross(xt, enc, enc, key_padding_mask=enc_pad, incremental_state=st, static_kv=True,
                  need_weights=False)
            for m in mods:
                m.reorder_incremental_state(st, order)
    return step


def flops(step):
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


def by_operator(step, top):
    prof = profiled(step, memory=True)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    table = [{"op": e.key, "calls": e.count, "self CPU ms": round(e.self_cpu_time_total / 1000, 3),
              "self CPU memory MB": round(e.self_cpu_memory_usage / 2 ** 20, 2)} for e in rows[:top]]
    return {"leaf aten ops": leaf_ops(prof.events()),
            "allocated MB": round(sum(max(e.self_cpu_memory_usage, 0) for e in rows) / 2 ** 20, 2),
            "top ops": table}


def measure_preset(preset, a, classes):
    d, heads = 512, 8
    g = torch.Generator().manual_seed(a.seed)
    B, T = a.batch, a.length
    x = torch.randn(T, B, d, generator=g, requires_grad=True)
    src_pad = torch.zeros(B, T, dtype=torch.bool)
    src_pad[1::3, : T // 3] = True  # left-padded sources
    tgt_pad = torch.zeros(B, T, dtype=torch.bool)
    tgt_pad[2::3, -T // 4:] = True  # right-padded targets
    rows = a.sentences * a.beam
    enc = torch.randn(a.length, a.sentences, d, generator=g).repeat_interleave(a.beam, dim=1)
    enc_pad = src_pad[: a.sentences].repeat_interleave(a.beam, dim=0)
    prefix = torch.randn(a.step, rows, d, generator=g)
    steps = {}
    for label, cls in classes.items():
        steps.setdefault("training enc", {})[label] = training_step(
            build(cls, preset, "enc", d, heads, a.seed).train(), "enc", x, src_pad)
        steps.setdefault("training dec", {})[label] = training_step(
            build(cls, preset, "dec", d, heads, a.seed).train(), "dec", x, tgt_pad)
        mods = [build(cls, preset, role, d, heads, a.seed).eval() for role in ("dec", "cross")]
        steps.setdefault("decoding step", {})[label] = decoding_step(mods, prefix, enc, enc_pad, a.beam, a.seed)
    out = {}
    for part, fns in steps.items():
        labels = list(fns)
        timed_steps = timed([fns[k] for k in labels], a.iters)
        fl = {k: flops(fns[k]) for k in labels}
        out[part] = {}
        for label, (ms, r) in zip(labels, timed_steps):
            speed, q1, q3 = statistics.median(r), r[len(r) // 4], r[(3 * len(r)) // 4]
            flop_ratio = fl[label] / fl["fairseq MHA"]
            # overhead = time ratio / FLOP ratio, the time ratio being the speed ratio's inverse
            out[part][label] = {"ms (median)": round(ms, 3), "speed ratio vs MHA (paired median)": round(speed, 3),
                                "speed ratio quartiles": [round(q1, 3), round(q3, 3)], "flops": fl[label],
                                "flop ratio": round(flop_ratio, 3), "overhead ratio": round(1 / (speed * flop_ratio), 3),
                                **by_operator(fns[label], a.ops)}
    return out


def run_pba(a, run):
    from fairseq_mgsa.modules.pba.attention import PhraseBasedAttention
    classes = {"fairseq MHA": None, "after": PhraseBasedAttention}
    if a.before:
        classes["before"] = load_before(a.before, "modules.pba.attention", "PhraseBasedAttention")
    for preset in a.presets.split(","):
        res = run["results"][preset] = measure_preset(preset, a, classes)
        for part, row in res.items():
            print(f"{preset} {part}: " + "; ".join(
                f"{label} {r['ms (median)']} ms, speed x{r['speed ratio vs MHA (paired median)']} "
                f"{r['speed ratio quartiles']}, flops x{r['flop ratio']}, overhead {r['overhead ratio']}, "
                f"{r['leaf aten ops']} leaf ops, {r['allocated MB']} MB" for label, r in row.items()), flush=True)
            for label, r in row.items():
                for op in r["top ops"]:
                    print(f"    {label:12s} {op['op']:40s} {op['calls']:5d} calls {op['self CPU ms']:9.3f} ms "
                          f"{op['self CPU memory MB']:9.2f} MB")


METHODS = {"mgsa": run_mgsa, "pba": run_pba}


def get_parser():
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_layers", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 1)[1])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--before", metavar="DIR", help="also measure the module of the checkout in DIR")
    common.add_argument("--iters", type=int, help="timed steps of every module (rounds of the rotation)")
    common.add_argument("--seed", type=int, default=1)
    common.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    methods = p.add_subparsers(dest="method", required=True, metavar="{mgsa,pba}")
    m = methods.add_parser("mgsa", parents=[common], help="the MG-SA encoder layer against fairseq's")
    m.add_argument("--models", default="syntactic,ngram", help=f"comma-separated, of {','.join(MODELS)}")
    m.add_argument("--batch-sizes", default="8,64")
    m.add_argument("--sentences-per-line", type=int, default=1,
                   help="grammar sentences per line (2-3 give WMT-like lengths)")
    m.add_argument("--out", help="JSON output (default benchmarks/runs/mgsa_layer_profile.json)")
    m.set_defaults(iters=20, out=default_out("mgsa_layer_profile.json"))
    b = methods.add_parser("pba", parents=[common], help="phrase-based attention against MultiheadAttention")
    b.add_argument("--presets", default=",".join(PRESETS), help="comma-separated, of " + ",".join(PRESETS))
    b.add_argument("--batch", type=int, default=32, help="training: sentences per batch")
    b.add_argument("--length", type=int, default=32, help="training: tokens per sentence; decoding: source length")
    b.add_argument("--sentences", type=int, default=32, help="decoding: sentences per batch")
    b.add_argument("--beam", type=int, default=4)
    b.add_argument("--step", type=int, default=16, help="decoding: the measured step (target position + 1)")
    b.add_argument("--ops", type=int, default=10, help="operators to list per module and step (by self CPU time)")
    b.add_argument("--out", help="JSON output (default benchmarks/runs/pba_profile.json)")
    b.set_defaults(iters=15, out=default_out("pba_profile.json"))
    return p


def main(argv=None):
    a = get_parser().parse_args(argv)
    torch.set_num_threads(a.threads)
    import fairseq_mgsa
    run = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": "python -m benchmarks.profile_layers " + shlex.join(sys.argv[1:] if argv is None else argv),
           "torch": torch.__version__,
           "code": {"after": os.path.dirname(os.path.abspath(fairseq_mgsa.__file__)),
                    "before": os.path.abspath(a.before) if a.before else None},
           "load average at start": os.getloadavg(), "results": {}}
    METHODS[a.method](a, run)
    run["load average at end"] = os.getloadavg()
    write_json(a.out, run, indent=1)


if __name__ == "__main__":
    sys.exit(main())
