"""One training update, the same code for every system, and the two ways of running it: each
system in its own run (wall time, peak memory), and all systems interleaved on every batch
(paired times, through benchmarks/timing.py).

The update is a plain loop (the system's fairseq criterion forward, backward of
loss / sample_size as fairseq normalises, torch.optim.Adam step, zero_grad) rather than
fairseq's Trainer: it times the model and nothing else. Batches are on the device before any
timing; CUDA is synchronised before every clock reading; --fp16 / --bf16 train under
torch.autocast (fp16 with a GradScaler).
"""

import gc
from contextlib import nullcontext

import torch

from benchmarks.timing import interleaved, synced_seconds, timed_update, within

from .data import model_batches


def build(args, task, device):
    """The system's model and criterion, the fairseq way, from the same seed."""
    torch.manual_seed(args.seed)
    model = task.build_model(args).to(device)
    criterion = task.build_criterion(args).to(device)
    return model, criterion


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
    for sample in batches[: a.warmup]:
        step(sample)
    losses = []
    seconds = synced_seconds(lambda: losses.extend(step(sample) for sample in batches[a.warmup:]), device)
    peak = torch.cuda.max_memory_allocated(device) / 2 ** 20 if device.type == "cuda" else mem.peak_mb()
    if save is not None:
        save(model)
    result = {"seconds": seconds, "peak_mem_MB": peak, "params": sum(p.numel() for p in model.parameters()),
              "net_input_left_out": dropped,
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

    Before any timing every system trains every batch once on a GPU (on the CPU the warm-up ones):
    the first use of a batch shape pays for kernel selection, allocator growth and Triton
    compilations, which must land on no timed update (the first GPU run's per-batch ratios
    ranged from 0.2 to 13 without it). Then rounds over the timed batches, each update between
    CUDA events after a synchronisation, until every system's median speed ratio against the
    baseline has a 95% interval within +-a.ci_target of it, or a.rounds rounds."""
    trainers = {n: make_trainer(all_args[n], task, batches, a, device) for n in names}
    warm = range(len(batches)) if device.type == "cuda" else range(a.warmup)
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
