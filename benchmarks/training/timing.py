"""One training update, the same code for every system, and the two ways of timing it:
each system in its own run (wall time, peak memory), and all systems interleaved on every
batch (paired times).

The update is a plain loop (the system's fairseq criterion forward, backward of
loss / sample_size as fairseq normalises, torch.optim.Adam step, zero_grad) rather than
fairseq's Trainer: it times the model and nothing else. Batches are on the device before any
timing; CUDA is synchronised before every clock reading; --fp16 / --bf16 train under
torch.autocast (fp16 with a GradScaler).
"""

import gc
import random
import statistics
import time
from contextlib import nullcontext

import torch

from .data import model_batches
from .env import sync


def build(args, task, device):
    """The system's model and criterion, the fairseq way, from the same seed."""
    torch.manual_seed(args.seed)
    model = task.build_model(args).to(device)
    criterion = task.build_criterion(args).to(device)
    return model, criterion


def mgsa_param_count(model):
    return sum(p.numel() for n, p in model.named_parameters()
               if ".phrase_memory." in n or "phrase_tag_classifier" in n)


def amp_dtype(a):
    """The dtype the matrix products run in: --fp16 / --bf16's, else float32."""
    return {"bf16": torch.bfloat16, "fp16": torch.float16, None: torch.float32}[a.amp_dtype]


def amp(a, device):
    """The autocast context of --fp16 / --bf16 on `device` (a nullcontext without either)."""
    if not a.amp_dtype:
        return nullcontext
    dtype = amp_dtype(a)
    return lambda: torch.autocast(device.type, dtype=dtype)


def no_phase(name):
    return nullcontext()


def optimizer(model, a, device, foreach=None):
    """(torch.optim.Adam as every system trains with, the GradScaler of --fp16 or None).
    foreach=None: torch's default, the foreach implementation on a GPU, a loop over the
    parameters on the CPU; the operator count (benchmarks/op_counts) asks for foreach on both."""
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-8, foreach=foreach)
    # float16's narrow range: the loss scaled up before backward, updates with inf/NaN gradients skipped
    scaler = torch.amp.GradScaler(device.type) if a.amp_dtype == "fp16" else None
    return opt, scaler


def update_step(model, criterion, opt, autocast, scaler=None):
    """step(sample, phase=no_phase) -> loss: one training update. `phase(name)` is a context
    entered around its "forward" (criterion and loss / sample_size), "backward" and
    "optimizer" parts: the FLOP and operator counts wrap them in their counters."""

    def step(sample, phase=no_phase):
        with phase("forward"):
            with autocast():
                loss, sample_size, _ = criterion(model, sample)
            loss = loss / sample_size
        with phase("backward"):
            (scaler.scale(loss) if scaler is not None else loss).backward()
        with phase("optimizer"):
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            opt.zero_grad(set_to_none=True)
        return loss.detach()

    return step


def make_trainer(args, task, batches, a, device):
    """(model, step(sample) -> loss, the batches as the model takes them, net_input keys
    left out): one training update, the same code for every system."""
    model, criterion = build(args, task, device)
    model.train()
    batches, dropped = model_batches(model, batches)
    opt, scaler = optimizer(model, a, device)
    return model, update_step(model, criterion, opt, amp(a, device), scaler), batches, dropped


def train_one(args, task, batches, a, device, mem, save=None):
    """One system alone: --warmup untimed updates, then the rest timed. Peak memory: on CUDA
    torch.cuda.max_memory_allocated, on CPU `mem` (env.CpuPeakMemory). `save(model)` is called
    at the end (the decoding benchmark's checkpoint)."""
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    else:
        mem.start()
    model, step, batches, dropped = make_trainer(args, task, batches, a, device)
    losses = []
    for sample in batches[: a.warmup]:
        step(sample)
    # per-update times too (CUDA events on GPU, no extra synchronisation): their median
    # is robust to a machine that is busy with something else for part of the run
    cuda = device.type == "cuda"
    marks = []
    sync(device)
    t0 = time.perf_counter()
    for sample in batches[a.warmup:]:
        if cuda:
            marks.append(torch.cuda.Event(enable_timing=True))
            marks[-1].record()
        else:
            marks.append(time.perf_counter())
        losses.append(step(sample))
    if cuda:
        marks.append(torch.cuda.Event(enable_timing=True))
        marks[-1].record()
    sync(device)
    seconds = time.perf_counter() - t0
    if not cuda:
        marks.append(time.perf_counter())
        step_s = [b - e for e, b in zip(marks, marks[1:])]
    else:
        step_s = [e.elapsed_time(b) / 1000 for e, b in zip(marks, marks[1:])]
    peak = torch.cuda.max_memory_allocated(device) / 2 ** 20 if cuda else mem.peak_mb()
    if save is not None:
        save(model)
    result = {"seconds": seconds, "median_step_s": statistics.median(step_s) if step_s else None,
              "peak_mem_MB": peak, "params": sum(p.numel() for p in model.parameters()),
              "mgsa_params": mgsa_param_count(model), "net_input_left_out": dropped,
              "loss_first": float(losses[0]) if losses else None,
              "loss_last": float(losses[-1]) if losses else None}
    del model, step, losses
    gc.collect()
    return result


def train_interleaved(names, all_args, task, batches, a, device, baseline=None):
    """Paired timing: all systems live at once and every timed batch trains each of them once,
    back to back, in an order that rotates from batch to batch. A machine whose speed drifts
    (a shared or throttled CPU, another job on the GPU) then slows them alike, and each batch
    gives a paired ratio. Returns {name: [seconds of each timed update]}.

    Before any timing every system trains every batch once (a.warm == "all", the GPU's default):
    the first use of a batch shape pays for kernel selection, allocator growth and Triton
    compilations, which must land on no timed update (the first GPU run's per-batch ratios
    ranged from 0.2 to 13 without it). Then rounds over the timed batches, each update between
    CUDA events after a synchronisation, until every system's median speed ratio against the
    baseline has a 95% interval within +-a.ci_target of it, or a.rounds rounds."""
    trainers = {n: make_trainer(all_args[n], task, batches, a, device) for n in names}
    warm = range(len(batches)) if getattr(a, "warm", "first") == "all" else range(a.warmup)
    for i in warm:
        for n in names:
            trainers[n][1](trainers[n][2][i])
    target = getattr(a, "ci_target", 0.0)
    times = interleaved(lambda n, i: timed_update(trainers[n][1], trainers[n][2][i], device), names,
                        range(a.warmup, len(batches)), max(1, getattr(a, "rounds", 1)),
                        stop=(lambda t: baseline in t and within(t, baseline, target)) if target else None)
    del trainers
    gc.collect()
    return times


def interleaved(measure, names, items, rounds=1, stop=None):
    """Paired measurements, the one way every benchmark here times its systems against each other:
    {name: [measure(name, item) for each round and item]}, every item measured for every name back
    to back, in an order that rotates from item to item (and on across rounds), so that a machine
    whose speed drifts slows them alike and the i-th values of two names form a pair. stop(times),
    called after each round but the last, ends the rounds early when true."""
    names = list(names)
    items = list(items)
    times = {n: [] for n in names}
    for r in range(rounds):
        for j, item in enumerate(items):
            k = (r * len(items) + j) % len(names)
            for n in names[k:] + names[:k]:
                times[n].append(measure(n, item))
        if stop is not None and r + 1 < rounds and stop(times):
            break
    return times


def paired_ms(steps, iters):
    """{k: [milliseconds of steps[k] in each round]}: every step once untimed, then `iters` rounds of
    all of them back to back in rotating order (interleaved), by the host's clock: the profiles'
    timing of a module against its baseline, steps[0]."""
    for step in steps:
        step()  # warm-up
    return interleaved(lambda k, _: 1000 * clock(steps[k]), range(len(steps)), range(iters))


def clock(fn, *args):
    """Seconds of fn(*args) by the host's clock."""
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def speed_ratios(times, baseline):
    """The speed ratio of each pair: the baseline's time / the system's time (> 1: the system is
    faster). The benchmarks' one direction; a time ratio, where one is reported, is its inverse."""
    return [b / m for m, b in zip(times, baseline)]


def timed_update(step, sample, device):
    """Seconds of one update: CUDA events around it on a GPU (the GPU's own clock, no host
    timer), the host's clock elsewhere; the device idle before it starts."""
    sync(device)
    if device.type != "cuda":
        return clock(step, sample)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step(sample)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000


def within(times, baseline, target, resamples=500):
    """Whether every system's median speed ratio has a 95% interval within +-target of it."""
    for n, t in times.items():
        if n == baseline:
            continue
        if len(t) < 8:  # too few pairs for an interval
            return False
        speed = speed_ratios(t, times[baseline])
        lo, hi = bootstrap_median_ci(speed, resamples)
        if (hi - lo) / 2 > target * statistics.median(speed):
            return False
    return True


def paired(times, baseline, resamples=2000):
    """Per-batch ratios against the baseline's time on the same batch: the median, the
    quartiles (the spread) and the median's 95% bootstrap interval of model time / baseline
    time, the speed ratio from total times, and the median speed ratio with its interval over
    the batches (how far the median itself can be trusted: a target is decided only where the
    interval clears it)."""
    speed = speed_ratios(times, baseline)
    ratios = [m / b for m, b in zip(times, baseline)]  # the time ratio: the inverse of each pair's speed ratio
    q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else [ratios[0]] * 3
    return {"time_ratio_median": statistics.median(ratios), "time_ratio_q1": q[0], "time_ratio_q3": q[2],
            "time_ratio_ci95": bootstrap_median_ci(ratios, resamples),
            "time_ratio_min": min(ratios), "time_ratio_max": max(ratios),
            "speed_ratio_interleaved": sum(baseline) / sum(times),
            "speed_ratio_interleaved_median": statistics.median(speed),
            "speed_ratio_interleaved_ci95": bootstrap_median_ci(speed, resamples),
            "paired_updates": len(ratios)}


def bootstrap_median_ci(values, resamples=2000):
    """95% percentile-bootstrap interval of the median of `values` (resampled with replacement)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return [medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]]


def flops_per_update(args, task, sample, a, device, count_ops=False, by_module=False):
    """FLOPs of one update (criterion forward + backward, the optimizer step left out) on
    `sample`, counted by torch.utils.flop_counter.FlopCounterMode, and of the forward alone.
    FlopCounterMode counts the matrix products, convolutions and attention kernels (what
    dominates a Transformer); element-wise work (activations, gates of an LSTM cell beyond its
    matrix products, normalisation, softmax) is not counted. With count_ops, "ops" holds the
    kernel operators and host synchronisations of a second update on the same sample
    (benchmarks/op_counts; on the CPU with the model's device choices as on a GPU), the optimizer
    Adam with foreach in both."""
    from torch.utils.flop_counter import FlopCounterMode

    from benchmarks.op_counts import as_on_gpu, count_update

    model, criterion = build(args, task, device)
    model.train()
    [sample], _ = model_batches(model, [sample])
    opt, scaler = optimizer(model, a, device, foreach=True)
    step = update_step(model, criterion, opt, amp(a, device), scaler)
    flops = {"forward": FlopCounterMode(display=False), "backward": FlopCounterMode(display=False)}
    step(sample, lambda name: flops.get(name) or nullcontext())
    fwd, bwd = flops["forward"].get_total_flops(), flops["backward"].get_total_flops()
    result = {"flops_per_update": fwd + bwd, "flops_forward": fwd, "flops_backward": bwd}
    if count_ops:
        if device.type == "cpu":
            as_on_gpu(model)
        result["ops"] = count_update(step, sample, device, (model, criterion) if by_module else ())
    del model, criterion, opt, step
    gc.collect()
    return result
