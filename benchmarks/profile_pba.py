#!/usr/bin/env python
"""Where a phrase-based attention module's time goes, against fairseq's MultiheadAttention.

For each PBA preset (attention x mode, n-grams 1,2) at base size (d 512, 8 heads) two steps are
measured, each against fairseq's MultiheadAttention in the same role and on the same input:

* training: one forward + backward of the encoder self-attention (B x T tokens, left-padded
  source, as fairseq pads) and of the decoder self-attention (causal, right-padded target);
* decoding: one incremental step of a decoder layer's two attentions (decoder self + cross over
  the encoder output) at step --step of beam search (--sentences x --beam hypotheses), including
  the beam reorder that follows every step (the same order for every module: a reorder within each
  sentence's beam, as fairseq's beam search does). Both modules get set_beam_size(--beam) as
  fairseq-generate's model does (when the module has it).

Reported per step: torch.profiler by operator (self CPU time and memory allocated, top --ops
rows; --ops 0 prints none), the leaf aten op count, and CPU time paired: the modules run back to
back --iters times in rotating order; the median of each and the median of the per-round speed ratio
(baseline ms / module ms, > 1: faster than MHA) are kept, and the ratio of the FLOPs
(torch.utils.flop_counter) gives the overhead ratio = time ratio / FLOP ratio, the time ratio
being the speed ratio's inverse (1: the module costs its arithmetic and nothing else).

With --before DIR (a checkout of an earlier version, e.g. /work/main or `git archive main
fairseq_mgsa | tar -x -C /tmp/main`), that version's PhraseBasedAttention is measured in the same
rotation, under another package name (its package __init__, which registers models, is not run).

    python -m benchmarks.profile_pba --before /tmp/main --ops 12

Results go to benchmarks/runs/pba_profile.json (or --out; the committed results:
--out docs/results/pba_profile.json).
"""

import argparse
import datetime
import importlib
import os
import statistics
import sys
import types

import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.run_outputs import default_out, write_json
from benchmarks.training.timing import clock, interleaved, speed_ratios

PRESETS = ["heterogeneous_convkv", "heterogeneous_queryk", "homogeneous_convkv", "homogeneous_queryk",
           "interleaved_convkv", "interleaved_queryk"]


def load_before(root):
    """PhraseBasedAttention of an earlier checkout, under the package name fairseq_mgsa_before."""
    name = "fairseq_mgsa_before"
    pkg = types.ModuleType(name)
    pkg.__path__ = [os.path.join(os.path.abspath(root), "fairseq_mgsa")]
    sys.modules[name] = pkg
    return importlib.import_module(name + ".modules.phrase_based_attention").PhraseBasedAttention


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
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    aten = [e for e in prof.events() if e.name.startswith("aten::")]
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    table = [{"op": e.key, "calls": e.count, "self CPU ms": round(e.self_cpu_time_total / 1000, 3),
              "self CPU memory MB": round(e.self_cpu_memory_usage / 2 ** 20, 2)} for e in rows[:top]]
    return {"leaf aten ops": sum(1 for e in aten if not e.cpu_children),
            "allocated MB": round(sum(max(e.self_cpu_memory_usage, 0) for e in rows) / 2 ** 20, 2),
            "top ops": table}


def paired(steps, iters):
    """Median ms per step, run back to back in rotating order (timing.interleaved), and the median
    and quartiles of its per-round speed ratio against steps[0], fairseq's MHA."""
    for s in steps:
        s()
    times = interleaved(lambda k, _: 1000 * clock(steps[k]), range(len(steps)), range(iters))
    out = []
    for t in times.values():
        r = sorted(speed_ratios(t, times[0]))
        out.append((statistics.median(t), statistics.median(r), r[len(r) // 4], r[(3 * len(r)) // 4]))
    return out


def measure(preset, a, classes):
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
        timed = paired([fns[k] for k in labels], a.iters)
        fl = {k: flops(fns[k]) for k in labels}
        out[part] = {}
        for label, (ms, speed, q1, q3) in zip(labels, timed):
            flop_ratio = fl[label] / fl["fairseq MHA"]
            # overhead = time ratio / FLOP ratio, the time ratio being the speed ratio's inverse
            out[part][label] = {"ms (median)": round(ms, 3), "speed ratio vs MHA (paired median)": round(speed, 3),
                                "speed ratio quartiles": [round(q1, 3), round(q3, 3)], "flops": fl[label],
                                "flop ratio": round(flop_ratio, 3), "overhead ratio": round(1 / (speed * flop_ratio), 3),
                                **by_operator(fns[label], a.ops)}
    return out


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", metavar="DIR", help="also measure PhraseBasedAttention of the checkout in DIR")
    p.add_argument("--presets", default=",".join(PRESETS), help="comma-separated, of " + ",".join(PRESETS))
    p.add_argument("--batch", type=int, default=32, help="training: sentences per batch")
    p.add_argument("--length", type=int, default=32, help="training: tokens per sentence; decoding: source length")
    p.add_argument("--sentences", type=int, default=32, help="decoding: sentences per batch")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--step", type=int, default=16, help="decoding: the measured step (target position + 1)")
    p.add_argument("--iters", type=int, default=15)
    p.add_argument("--ops", type=int, default=10, help="operators to list per module and step (by self CPU time)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=default_out("pba_profile.json"),
                   help="JSON output (default benchmarks/runs/pba_profile.json)")
    return p


def main(argv=None):
    a = get_parser().parse_args(argv)
    torch.set_num_threads(a.threads)
    import fairseq_mgsa
    from fairseq_mgsa.modules.pba.attention import PhraseBasedAttention
    classes = {"fairseq MHA": None, "after": PhraseBasedAttention}
    if a.before:
        classes["before"] = load_before(a.before)
    run = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "torch": torch.__version__,
           "code": {"after": os.path.dirname(os.path.abspath(fairseq_mgsa.__file__)),
                    "before": os.path.abspath(a.before) if a.before else None},
           "load average at start": os.getloadavg(), "results": {}}
    for preset in a.presets.split(","):
        res = run["results"][preset] = measure(preset, a, classes)
        for part, row in res.items():
            print(f"{preset} {part}: " + "; ".join(
                f"{label} {r['ms (median)']} ms, speed x{r['speed ratio vs MHA (paired median)']} "
                f"{r['speed ratio quartiles']}, flops x{r['flop ratio']}, overhead {r['overhead ratio']}, "
                f"{r['leaf aten ops']} leaf ops, {r['allocated MB']} MB" for label, r in row.items()), flush=True)
            for label, r in row.items():
                for op in r["top ops"]:
                    print(f"    {label:12s} {op['op']:40s} {op['calls']:5d} calls {op['self CPU ms']:9.3f} ms "
                          f"{op['self CPU memory MB']:9.2f} MB")
    run["load average at end"] = os.getloadavg()
    write_json(a.out, run, indent=1)


if __name__ == "__main__":
    sys.exit(main())
