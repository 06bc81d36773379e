#!/usr/bin/env python
"""Training throughput: fairseq's `transformer` against MG-SA variants, on identical batches.

One run generates a parallel corpus with gold trees from the project's grammar
(preprocess/synthetic.py), binarizes it in-process with `mgsa-preprocess --trees-suffix tree
--joined-dictionary --levels 3` (fairseq's binaries + phrase files syn1..syn3 + tag
dictionary), builds one list of batches from the `mgsa_translation` task's batch iterator
(fixed seed, --max-tokens) and trains every model on that same list for --warmup untimed
updates followed by --updates timed ones. Every batch carries the phrase fields
(net_input.src_phrase_lengths / src_phrase_counts, phrase_tags): MG-SA models take them
(n-gram ones ignore them); for a model whose forward has no parameter for them (fairseq's
TransformerModel.forward has no **kwargs) they are left out of its net_input, in views of
the same tensors made before timing (the JSON lists what was left out). Models are built the
fairseq way: options.parse_args_and_arch(... --user-dir <fairseq_mgsa>), task.build_model,
task.build_criterion. The criterion is label_smoothed_cross_entropy (smoothing 0.1), but
the syntactic family (arch mgsa_transformer_syntactic: word,syn1,syn2,syn3 heads, SAN
composition, ON-LSTM, layer 1) trains with label_smoothed_cross_entropy_with_phrase_tags
(+ 0.001 * L_tag), whose cost is part of what is measured.

The training step is a plain loop (criterion forward, backward of loss / sample_size as
fairseq normalises, torch.optim.Adam step, zero_grad) rather than fairseq's Trainer: it
times the model and nothing else, with the same code for every model. Batches are moved
to the device once, before any timing; CUDA is synchronised before every clock reading;
--fp16 trains under torch.autocast (bf16, or --amp-dtype fp16 with a GradScaler). On a
CPU shared with other work, --threads 1 avoids OpenMP oversubscription (seen: 20x slower).

Per model: updates/s, tokens/s (source + target non-pad tokens), peak memory, parameters
(total, overhead over the baseline, MG-SA modules) and ratios against the baseline (speed
ratio = model updates/s / baseline updates/s), beside the paper's figures (Hao et al.
2019, Table 1) where it has some. --repeats R trains every model R times (same
initialisation, model order rotating) and reports medians. Targets (TARGETS; `targets` in
the JSON, a pass/fail table): speed ratio >= 0.98 n-gram/SAN, >= 0.95 n-gram + ON-LSTM,
>= 0.95 syntactic (paper: 0.93); peak memory <= 1.1x the baseline's; parameter overhead
within 10% of the paper's where it has a figure for the size (base: +0.4M n-gram/SAN,
+1.9M full syntactic; big: +7.4M). Speed is judged on the wall-time ratio, or with
--interleave on the paired ratio: all models live at once and every timed batch trains
each of them back to back in rotating order, so a machine whose speed drifts (a shared
virtual CPU varies by 10% from run to run) slows them alike.

Peak memory: on CUDA, torch.cuda.max_memory_allocated() after reset_peak_memory_stats()
(absolute, includes the batches already on the device). On CPU, the growth of the
process's peak resident set (VmHWM) over its resident set before the model is built:
the peak is reset through /proc/self/clear_refs and freed heap is returned with
malloc_trim first, so each model gets its own figure. Where /proc/self/clear_refs is
not writable it falls back to the growth of getrusage's ru_maxrss, which only sees
models that raise the process's peak (the JSON says which method was used).

    python benchmarks/bench_training.py --arch-size tiny --updates 20
    python benchmarks/bench_training.py --arch-size base --updates 20 --max-tokens 1024
    python benchmarks/bench_training.py --arch-size base --updates 200 --warmup 20 --fp16 --repeats 3   # GPU

Writes benchmarks/results/training_<device>_<arch-size>.json (or --out) and appends one
line to benchmarks/results/history.jsonl. --profile adds, per model: encoder layer 1 and
its parts (forward + backward), the partition construction, the phrase-tag classifier +
L_tag, one whole criterion forward + backward, and in it the host synchronisations
(.item(), int(t), bool(t)) and leaf aten ops (~ kernel launches); --profile-ops N adds torch.profiler's top ops of layer 1.

Adding a model: a row in MODELS (name -> family + extra args), or on the command line
--define 'mgsa_lstm=mgsa --mgsa-interaction lstm' --models transformer,mgsa_lstm.
The family (transformer, mgsa, mgsa_syntactic) picks the architecture for --arch-size and
the criterion. --data may name another binarized directory (syntactic models need its
phrase files from mgsa-preprocess, and --task mgsa_translation, the default).
"""

import argparse
import ctypes
import datetime
import gc
import inspect
import itertools
import json
import logging
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
sys.path.insert(0, ROOT)

logger = logging.getLogger("bench_training")

# model name -> (family, extra command-line args). The family picks the --arch for the size
# and the criterion (CRITERIA).
MODELS = {
    "transformer": ("transformer", []),
    "mgsa_ngram_san": ("mgsa", []),  # layer 1, word,ngram2,ngram3,ngram4, SAN composition
    "mgsa_ngram_san_onlstm": ("mgsa", ["--mgsa-interaction", "onlstm"]),
    # the paper's full model: word,syn1,syn2,syn3, SAN, ON-LSTM, layer 1, + 0.001 * L_tag
    "mgsa_syntactic": ("mgsa_syntactic", []),
    "mgsa_ngram_max": ("mgsa", ["--mgsa-composition", "max"]),
    "mgsa_ngram_lstm": ("mgsa", ["--mgsa-composition", "lstm"]),
    "mgsa_ngram_san_lstm": ("mgsa", ["--mgsa-interaction", "lstm"]),
    "mgsa_ngram_san_all_layers": ("mgsa", ["--mgsa-layers", "all"]),
}
DEFAULT_MODELS = "transformer,mgsa_ngram_san,mgsa_ngram_san_onlstm,mgsa_syntactic"
BASELINE = "transformer"
FAMILIES = ("transformer", "mgsa", "mgsa_syntactic")
CRITERIA = {"mgsa_syntactic": "label_smoothed_cross_entropy_with_phrase_tags"}  # default below
DEFAULT_CRITERION = "label_smoothed_cross_entropy"

ARCHS = {  # arch size -> family -> arch, and "args": extra args for every family
    "tiny": {
        "transformer": "transformer",
        "mgsa": "mgsa_transformer",
        "mgsa_syntactic": "mgsa_transformer_syntactic",  # its preset on the tiny dims: 1 head per granularity
        "args": ["--encoder-layers", "3", "--decoder-layers", "3",
                 "--encoder-embed-dim", "128", "--decoder-embed-dim", "128",
                 "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256",
                 "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"],
    },
    "base": {"transformer": "transformer", "mgsa": "mgsa_transformer",  # 512/2048/8 heads
             "mgsa_syntactic": "mgsa_transformer_syntactic", "args": []},
    "big": {"transformer": "transformer_vaswani_wmt_en_de_big", "mgsa": "mgsa_transformer_big",
            "mgsa_syntactic": "mgsa_transformer_big_syntactic", "args": []},
}

# Hao et al. 2019, Table 1 (WMT14 En-De; params in M, training speed in steps/s). Their
# vocabulary differs from ours: compare overheads and speed ratios, not totals.
FULL_ROW = "+ ON-LSTM interaction (full MG-SA: syntactic + L_tag + ON-LSTM)"
PAPER = {
    "base": {
        "transformer": {"params_M": 88.0, "overhead_M": 0.0, "steps_per_s": 1.28,
                        "row": "Transformer-Base"},
        "mgsa_ngram_san": {"params_M": 88.4, "overhead_M": 0.4, "steps_per_s": 1.28,
                           "row": "+ n-gram, SANs, layer 1"},
        "mgsa_syntactic": {"params_M": 89.9, "overhead_M": 1.9, "steps_per_s": 1.19, "row": FULL_ROW},
        "mgsa_ngram_san_onlstm": {"params_M": 89.9, "overhead_M": 1.9, "steps_per_s": 1.19,
                                  "row": FULL_ROW + "; the paper has no n-gram + ON-LSTM row, this one has "
                                                    "the same modules but the tag classifier"},
        "mgsa_ngram_san_lstm": {"params_M": 89.5, "overhead_M": 1.5, "steps_per_s": 1.20,
                                "row": "+ LSTM interaction (syntactic + L_tag + LSTM)"},
        "mgsa_ngram_san_all_layers": {"params_M": 90.4, "overhead_M": 2.4, "steps_per_s": 1.26,
                                      "row": "n-gram, SANs composition, layers 1-6 (Table 2)"},
    },
    "big": {
        "transformer": {"params_M": 264.1, "overhead_M": 0.0, "row": "Transformer-Big"},
        "mgsa_syntactic": {"params_M": 271.5, "overhead_M": 7.4, "row": "Big + MG-SA (full)"},
        "mgsa_ngram_san_onlstm": {"params_M": 271.5, "overhead_M": 7.4,
                                  "row": "Big + MG-SA (full: syntactic + L_tag + ON-LSTM)"},
    },
}
for row in PAPER["base"].values():
    if "steps_per_s" in row:
        row["speed_ratio"] = round(row["steps_per_s"] / PAPER["base"]["transformer"]["steps_per_s"], 3)

# Targets (issue 4). Speed: minimum speed ratio against the baseline, per model; memory: the
# most peak memory of any MG-SA model against the baseline's; overhead: the most relative
# deviation of the parameter overhead from the paper's, where the paper has one for the size.
TARGETS = {
    "speed_ratio_min": {"mgsa_ngram_san": 0.98, "mgsa_ngram_san_onlstm": 0.95, "mgsa_syntactic": 0.95},
    "mem_ratio_max": 1.10,
    "overhead_rel_tol": 0.10,
}


# ---------------------------------------------------------------- environment

def git_info():
    def git(*a):
        try:
            return subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except Exception:
            return ""
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(device):
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        return {"type": "cuda", "name": torch.cuda.get_device_name(device),
                "memory_GiB": round(p.total_memory / 2 ** 30, 1), "cuda": torch.version.cuda}
    return {"type": "cpu", "name": cpu_name(), "threads": torch.get_num_threads(), "cores": os.cpu_count()}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class CpuPeakMemory:
    """Peak RSS growth of this process during a block, in MB (see the module docstring)."""

    def __init__(self):
        self.method = "VmHWM growth (peak reset via /proc/self/clear_refs, after malloc_trim)"
        try:
            self._libc = ctypes.CDLL("libc.so.6")
        except OSError:
            self._libc = None
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self._status("VmHWM")
        except (OSError, KeyError):
            self.method = "ru_maxrss growth (getrusage; only models that raise the process peak show)"

    @staticmethod
    def _status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        raise KeyError(key)

    def start(self):
        gc.collect()
        if self._libc is not None:
            self._libc.malloc_trim(0)
        if self.method.startswith("VmHWM"):
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.base = self._status("VmRSS")
        else:
            self.base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def peak_mb(self):
        if self.method.startswith("VmHWM"):
            peak = self._status("VmHWM")
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return max(0, peak - self.base) / 2 ** 20


# ---------------------------------------------------------------- data

def make_data(workdir, train_sentences, seed, sentences_per_line=1):
    """Synthetic corpus with gold trees -> `mgsa-preprocess` binaries (joined dictionary, phrase
    files syn1..syn3, tag dictionary). Returns (data-bin dir, summary of the phrase levels)."""
    import io
    from contextlib import redirect_stdout

    from preprocess import cli
    from preprocess.synthetic import write_corpus

    raw, data = os.path.join(workdir, "raw"), os.path.join(workdir, "data-bin")
    write_corpus(raw, (("train", train_sentences), ("valid", 100), ("test", 100)), seed=seed,
                 sentences_per_line=sentences_per_line)
    args = cli.get_parser().parse_args([
        "--source-lang", "src", "--target-lang", "tgt", "--trainpref", f"{raw}/train",
        "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test", "--destdir", data,
        "--joined-dictionary", "--workers", "1", "--trees-suffix", "tree", "--levels", "3",
        "--subword-style", "none", "--no-progress-bar"])
    quiet = [logging.getLogger(n) for n in ("fairseq_cli.preprocess", "preprocess")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.WARNING)
    try:
        with redirect_stdout(io.StringIO()):  # the report is printed; its figures go into the JSON
            report = cli.run(args)
    finally:
        for q, level in zip(quiet, levels):
            q.setLevel(level)
    train = report["splits"]["train"]
    return data, {"tags": report["tags"], "train_sentences": train["sentences"],
                  "mean_phrase_tokens": [lv["mean_phrase_subwords"] for lv in train["levels"]]}


def model_args(name, spec, a, data):
    family, extra = spec
    arch = ARCHS[a.arch_size][family]
    return [data, "--user-dir", USER_DIR, "--task", a.task, "--arch", arch, *ARCHS[a.arch_size]["args"],
            "--share-all-embeddings", "--criterion", CRITERIA.get(family, DEFAULT_CRITERION),
            "--label-smoothing", "0.1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", str(a.lr),
            "--max-tokens", str(a.max_tokens), "--seed", str(a.seed), *extra]


def parse(argv):
    from fairseq import options
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, input_args=argv)


def build_batches(args, n, device):
    """The first n batches of one shuffled epoch (cycled if the epoch is shorter)."""
    from fairseq import tasks, utils
    task = tasks.setup_task(args)
    task.load_dataset(args.train_subset, combine=False, epoch=1)
    dataset = task.dataset(args.train_subset)
    itr = task.get_batch_iterator(
        dataset=dataset, max_tokens=args.max_tokens, max_sentences=None,
        max_positions=utils.resolve_max_positions(task.max_positions(), (1024, 1024)),  # model defaults
        ignore_invalid_inputs=True, required_batch_size_multiple=8, seed=args.seed, num_workers=0,
        epoch=1).next_epoch_itr(shuffle=True)
    epoch = list(itertools.islice(itr, n))
    if len(epoch) < n:
        logger.warning("the training set gives %d batches, %d needed: cycling them", len(epoch), n)
    batches = [utils.move_to_cuda(b, device) if device.type == "cuda" else b
               for b in itertools.islice(itertools.cycle(epoch), n)]
    pad = task.source_dictionary.pad()
    return task, batches, pad


def model_batches(model, batches):
    """The batches as `model` takes them: net_input keys its forward has no parameter for
    are left out (views sharing the tensors). Returns (batches, names of the keys left out)."""
    params = inspect.signature(model.forward).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return batches, []
    dropped = sorted({k for b in batches for k in b["net_input"] if k not in params})
    if not dropped:
        return batches, []
    return [{**b, "net_input": {k: v for k, v in b["net_input"].items() if k in params}} for b in batches], dropped


def count_tokens(batch, pad):
    return int(batch["net_input"]["src_tokens"].ne(pad).sum()) + int(batch["target"].ne(pad).sum())


# ---------------------------------------------------------------- training

def build(name, args, task, device):
    torch.manual_seed(args.seed)
    model = task.build_model(args).to(device)
    criterion = task.build_criterion(args).to(device)
    return model, criterion


def mgsa_param_count(model):
    return sum(p.numel() for n, p in model.named_parameters()
               if ".phrase_memories." in n or "phrase_tag_classifier" in n)


def amp(a):
    """The autocast context of --fp16 / --amp-dtype (a nullcontext without --fp16)."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.amp_dtype]
    return (lambda: torch.autocast("cuda", dtype=dtype)) if a.fp16 else nullcontext


def train_one(name, args, task, batches, a, device, mem):
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    else:
        mem.start()
    model, step, batches, dropped = make_trainer(name, args, task, batches, a, device)
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
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) / 2 ** 20
    else:
        peak = mem.peak_mb()
    params = sum(p.numel() for p in model.parameters())
    result = {"seconds": seconds, "median_step_s": statistics.median(step_s) if step_s else None,
              "peak_mem_MB": peak, "params": params, "mgsa_params": mgsa_param_count(model),
              "net_input_left_out": dropped,
              "loss_first": float(losses[0]) if losses else None,
              "loss_last": float(losses[-1]) if losses else None}
    del model, step, losses
    gc.collect()
    return result


def make_trainer(name, args, task, batches, a, device):
    """(model, step(sample) -> loss, the batches as the model takes them, net_input keys
    left out): one training update, the same code for every model."""
    model, criterion = build(name, args, task, device)
    model.train()
    batches, dropped = model_batches(model, batches)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-8)
    autocast = amp(a)
    scaler = torch.amp.GradScaler("cuda") if a.fp16 and a.amp_dtype == "fp16" else None

    def step(sample):
        with autocast():
            loss, sample_size, _ = criterion(model, sample)
        loss = loss / sample_size
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    return model, step, batches, dropped


def train_interleaved(names, all_args, task, batches, a, device):
    """Paired timing: all models live at once and every timed batch trains each of them once,
    back to back, in an order that rotates from batch to batch. A machine whose speed drifts
    (a shared or throttled CPU, another job on the GPU) then slows the models alike, and each
    batch gives a paired ratio. Returns {model: [seconds of each timed update]}."""
    trainers = {n: make_trainer(n, all_args[n], task, batches, a, device) for n in names}
    for i in range(a.warmup):
        for n in names:
            trainers[n][1](trainers[n][2][i])
    times = {n: [] for n in names}
    for j, i in enumerate(range(a.warmup, len(batches))):
        for n in names[j % len(names):] + names[: j % len(names)]:
            _, step, model_batches_, _ = trainers[n]
            sync(device)
            t0 = time.perf_counter()
            step(model_batches_[i])
            sync(device)
            times[n].append(time.perf_counter() - t0)
    del trainers
    gc.collect()
    return times


# ---------------------------------------------------------------- profile of encoder layer 1

def time_fwd_bwd(fn, inputs, device, iters, backward=True):
    """Mean ms of fn(*inputs) forward + backward (sum of the outputs), after one warmup."""
    def once():
        out = fn(*inputs)
        out = out[0] if isinstance(out, tuple) else out
        if backward:
            out.float().sum().backward()
    once()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        once()
    sync(device)
    return (time.perf_counter() - t0) / iters * 1000


def replay(module, args_, kwargs_):
    """(fn, x): fn(x) calls module as recorded, with x (a copy of its first tensor argument
    that requires grad) in every place that argument held (query = key = value for attention)."""
    primary = args_[0] if args_ else next(v for v in kwargs_.values() if torch.is_tensor(v))
    x = primary.detach().clone().requires_grad_(primary.is_floating_point())

    def fn(x):
        r_args = [x if t is primary else t for t in args_]
        r_kwargs = {k: (x if v is primary else v) for k, v in kwargs_.items()}
        return module(*r_args, **r_kwargs)
    return fn, x


def profile_model(name, args, task, batches, a, device):
    """Where the time of one update goes, on the first timed batch (under --fp16's autocast).

    Encoder layer 1 and its parts, forward + backward: forward pre-hooks record the
    arguments each part receives in a real forward pass of the model; every part is then
    replayed on those arguments, with its input tensor requiring grad, so the figures follow
    whatever the modules' signatures are. Beside them: the partition construction (forward
    only, it has no parameters), the phrase-tag classifier + loss on the composed phrases
    (models with tag supervision), one criterion forward + backward of the whole model, and
    in such a pass the host synchronisations (.item(), int(t), bool(t) of a tensor:
    aten::_local_scalar_dense; a .cpu() copy syncs on GPU too but is free, so unseen, on CPU)
    and the leaf aten ops (ops that call no other: about the kernels launched on a GPU).
    """
    model, criterion = build(name, args, task, device)
    model.train()
    [sample], _ = model_batches(model, [batches[a.warmup] if len(batches) > a.warmup else batches[0]])
    net_input, encoder, iters = sample["net_input"], model.encoder, a.profile_iters
    layer = encoder.layers[0]
    parts = {"layer 1": layer, "self-attention": layer.self_attn}
    for g, memory in getattr(layer.self_attn, "phrase_memories", {}).items():
        parts[f"{g}: phrase memory (composition + interaction)"] = memory
        parts[f"{g}: composition"] = memory.composition
        if memory.interaction is not None:
            parts[f"{g}: interaction"] = memory.interaction
    calls, hooks, encoder_out = {}, [], {}
    for label, module in parts.items():
        def record(mod, args_, kwargs_, label=label):
            calls.setdefault(label, (args_, kwargs_))
        hooks.append(module.register_forward_pre_hook(record, with_kwargs=True))
    hooks.append(encoder.register_forward_hook(lambda mod, inp, out: encoder_out.update(out)))
    autocast = amp(a)
    with torch.no_grad(), autocast():
        model(**net_input)
    for h in hooks:
        h.remove()

    def amp_fn(fn):  # forward under --fp16's autocast, backward outside it (as in training)
        def wrapped(*inputs):
            with autocast():
                return fn(*inputs)
        return wrapped

    rows = {"tokens (B x T)": "x".join(map(str, net_input["src_tokens"].shape))}
    def update():
        loss, sample_size, _ = criterion(model, sample)
        return loss / sample_size
    step = amp_fn(update)
    rows["model + criterion, forward + backward ms"] = time_fwd_bwd(step, [], device, iters)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step().backward()
    rows["host syncs in one forward + backward"] = sum(
        e.count for e in prof.key_averages() if e.key == "aten::_local_scalar_dense")
    rows["leaf aten ops in one forward + backward (~ GPU kernel launches)"] = sum(
        1 for e in prof.events() if e.name.startswith("aten::") and not e.cpu_children)
    for label, module in parts.items():
        if label not in calls:
            continue
        args_, kwargs_ = calls[label]
        if label.endswith("self-attention") and not hasattr(module, "phrase_memories"):
            kwargs_ = dict(kwargs_, need_weights=False)  # as fairseq's encoder layer calls it
        fn, x = replay(module, args_, kwargs_)
        rows[f"{label} ms"] = time_fwd_bwd(amp_fn(fn), [x], device, iters)
        if label.endswith("interaction"):
            rows[f"{label}: phrases P"] = int(x.size(1))
    if hasattr(encoder, "build_partitions"):
        mask = net_input["src_tokens"].eq(encoder.padding_idx)
        with torch.no_grad():
            rows["partitions (forward) ms"] = time_fwd_bwd(
                encoder.build_partitions, [mask, net_input.get("src_phrase_lengths"),
                                           net_input.get("src_phrase_counts")], device, iters, backward=False)
    if getattr(encoder, "phrase_tag_classifier", None) is not None and "phrase_tags" in sample:
        from fairseq_mgsa.criterions.label_smoothed_cross_entropy_with_phrase_tags import phrase_tag_loss
        composed = [{g: (c.detach().requires_grad_(), p) for g, (c, p) in layer_composed.items()}
                    for layer_composed in encoder_out["mgsa_composed"]]
        leaves = [c for layer_composed in composed for c, _ in layer_composed.values()]

        def tag_loss(*_):
            logits = encoder.phrase_tag_logits({"mgsa_composed": composed})
            return phrase_tag_loss(logits, sample["phrase_tags"], criterion.tag_pad, criterion.tag_unk)[0]
        rows["phrase-tag classifier + L_tag ms"] = time_fwd_bwd(amp_fn(tag_loss), leaves, device, iters)
    if a.profile_ops:
        acts = [torch.profiler.ProfilerActivity.CPU] + (
            [torch.profiler.ProfilerActivity.CUDA] if device.type == "cuda" else [])
        fn, x = replay(layer, *calls["layer 1"])
        fn = amp_fn(fn)
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(iters):
                out = fn(x)
                (out[0] if isinstance(out, tuple) else out).float().sum().backward()
            sync(device)
        sort = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
        rows["top ops"] = prof.key_averages().table(sort_by=sort, row_limit=a.profile_ops)
    del model, criterion
    return rows


# ---------------------------------------------------------------- report

def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(results, arch_size):
    paper = PAPER.get(arch_size, {})
    head = ["model", "params M", "+M vs base", "paper +M", "upd/s", "speed ratio", "paper ratio",
            "ratio (median step)", "tok/s", "peak mem MB", "mem ratio"]
    rows = [head]
    for name, r in results.items():
        p = paper.get(name, {})
        rows.append([name, fmt(r["params_M"], ".2f"), fmt(r["param_overhead_M"], "+.3f"),
                     fmt(p.get("overhead_M"), "+.1f"), fmt(r["updates_per_s"], ".3f"),
                     fmt(r["speed_ratio"], ".3f"), fmt(p.get("speed_ratio"), ".3f"),
                     fmt(r["speed_ratio_median_step"], ".3f"),
                     fmt(r["tokens_per_s"], ".0f"), fmt(r["peak_mem_MB"], ".0f"), fmt(r["mem_ratio"], ".3f")])
    return render(rows, right_aligned=True)


def render(rows, right_aligned):
    """Rows of strings as aligned columns (the first left-aligned), a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) if i and right_aligned else c.ljust(w)
                       for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    lines.insert(1, "-" * max(map(len, lines)))
    return "\n".join(lines)


def check_targets(results, arch_size):
    """{model: {target: {"target", "value", "pass"}}} for the TARGETS (see the module docstring);
    "pass" is None where a figure is missing (no baseline, no paper figure for this size)."""
    out = {}
    for name, r in results.items():
        if name == BASELINE:
            continue
        checks = {}
        speed_min = TARGETS["speed_ratio_min"].get(name)
        if speed_min is not None:
            # the paired (interleaved) ratio where it was measured, else the wall-time one
            paired = r.get("speed_ratio_interleaved")
            value = paired if paired is not None else r["speed_ratio"]
            checks["speed"] = {"target": f"speed ratio >= {speed_min}", "value": value,
                               "measure": "interleaved" if paired is not None else "wall time",
                               "wall_time_value": r["speed_ratio"],
                               "median_step_value": r["speed_ratio_median_step"],
                               "pass": None if value is None else value >= speed_min}
        mem_max = TARGETS["mem_ratio_max"]
        checks["memory"] = {"target": f"peak memory ratio <= {mem_max}", "value": r["mem_ratio"],
                            "pass": None if r["mem_ratio"] is None else r["mem_ratio"] <= mem_max}
        paper = (r.get("paper") or {}).get("overhead_M")
        tol = TARGETS["overhead_rel_tol"]
        dev = (None if paper is None or r["param_overhead_M"] is None
               else r["param_overhead_M"] / paper - 1)
        checks["param_overhead"] = {
            "target": (f"overhead within {tol:.0%} of the paper's +{paper}M" if paper is not None
                       else f"no paper figure for {name} at size {arch_size}"),
            "value": r["param_overhead_M"], "relative_deviation": dev,
            "pass": None if dev is None else abs(dev) <= tol}
        out[name] = checks
    return out


def targets_table(targets):
    rows = [["model", "target", "value", "result"]]
    for name, checks in targets.items():
        for c in checks.values():
            value = fmt(c["value"], ".3f")
            if c.get("measure") == "interleaved":
                value += f" interleaved (wall time {fmt(c['wall_time_value'], '.3f')})"
            elif c.get("median_step_value") is not None:
                value += f" (median step {c['median_step_value']:.3f})"
            if c.get("relative_deviation") is not None:
                value += f" ({c['relative_deviation']:+.1%})"
            rows.append([name, c["target"], value, {True: "pass", False: "FAIL", None: "n/a"}[c["pass"]]])
    return render(rows, right_aligned=False)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=DEFAULT_MODELS,
                   help=f"comma-separated names (baseline first is best); known: {', '.join(MODELS)}")
    p.add_argument("--define", action="append", default=[], metavar="'NAME=FAMILY ARGS...'",
                   help=f"add a model: a family ({', '.join(FAMILIES)}), then its extra fairseq args")
    p.add_argument("--arch-size", choices=sorted(ARCHS), default="tiny")
    p.add_argument("--updates", type=int, default=50, help="timed updates per model")
    p.add_argument("--warmup", type=int, default=5, help="untimed updates before timing")
    p.add_argument("--max-tokens", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=1, help="repeat each model, rotating the order; report medians")
    p.add_argument("--interleave", action="store_true",
                   help="also time all models side by side, alternating on every batch (paired ratios, "
                        "robust to a machine whose speed drifts); the speed targets then use these ratios")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--fp16", action="store_true", help="mixed precision (torch.autocast) on GPU")
    p.add_argument("--amp-dtype", choices=["bf16", "fp16"], default="bf16",
                   help="autocast dtype for --fp16 (fp16 uses a GradScaler)")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--task", default="mgsa_translation",
                   help="task that makes the batches (every model's); syntactic models need mgsa_translation")
    p.add_argument("--data", help="an existing binarized data directory instead of the generated corpus")
    p.add_argument("--sentences-per-line", type=int, default=1,
                   help="generated corpus: grammar sentences joined into one line (3: WMT-like lengths, ~32 words)")
    p.add_argument("--train-sentences", type=int, help="size of the generated training set (default: enough "
                                                          "for warmup + updates batches)")
    p.add_argument("--out", help="JSON output (default benchmarks/results/training_<device>_<arch-size>.json)")
    p.add_argument("--history", default=os.path.join(RESULTS, "history.jsonl"),
                   help="JSON-lines file that gets one line per run ('' for none)")
    p.add_argument("--profile", action="store_true",
                   help="also time the parts of encoder layer 1 of every model (forward + backward)")
    p.add_argument("--profile-iters", type=int, default=5)
    p.add_argument("--profile-ops", type=int, default=0, help="with --profile: print the N top torch.profiler ops")
    p.add_argument("--threads", type=int, help="torch.set_num_threads (CPU)")
    a = p.parse_args(argv)

    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stdout)
    for d in a.define:
        name, _, rest = d.partition("=")
        words = shlex.split(rest)
        if not name or not words or words[0] not in FAMILIES:
            p.error(f"--define {d!r}: expected NAME=FAMILY ARGS..., FAMILY one of {', '.join(FAMILIES)}")
        MODELS[name.strip()] = (words[0], words[1:])
    names = [n.strip() for n in a.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        p.error(f"unknown models {unknown}; known: {', '.join(MODELS)} (or add one with --define)")
    if a.task != "mgsa_translation" and any(MODELS[n][0] == "mgsa_syntactic" for n in names):
        p.error(f"syntactic models need the phrase fields of --task mgsa_translation (got --task {a.task})")
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: no CUDA device")
    if a.fp16 and a.device != "cuda":
        p.error("--fp16 is for GPU runs (--device cuda)")
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out = a.out or os.path.join(RESULTS, f"training_{a.device}_{a.arch_size}.json")
    n_batches = a.warmup + a.updates

    workdir = None
    t_start = time.perf_counter()
    try:
        if a.data:
            data, phrases = a.data, None
        else:
            workdir = tempfile.mkdtemp(prefix="mgsa_bench_")
            # about max_tokens / 12 sentences per batch (short sentences, padding, multiple of 8)
            words = 11 * a.sentences_per_line + 1  # tokens per line, about
            n_train = a.train_sentences or min(400_000, max(2000, int(n_batches * a.max_tokens / words * 1.2)))
            logger.info("generating %d training sentences and binarizing them in %s", n_train, workdir)
            data, phrases = make_data(workdir, n_train, a.seed, a.sentences_per_line)

        all_args = {n: parse(model_args(n, MODELS[n], a, data)) for n in names}
        task, batches, pad = build_batches(all_args[names[0]], n_batches, device)
        timed = batches[a.warmup:]
        tokens = sum(count_tokens(b, pad) for b in timed)
        sentences = sum(int(b["nsentences"]) for b in timed)
        logger.info("%d batches (%d warmup + %d timed); timed: %d sentences, %d src+tgt tokens, dictionary %d",
                    len(batches), a.warmup, len(timed), sentences, tokens, len(task.source_dictionary))

        mem = CpuPeakMemory() if device.type == "cpu" else None
        # one untimed update of every model first, so that one-time costs (lazy library and
        # kernel initialisation, allocator growth) land on no model's time or memory figure
        primer = argparse.Namespace(**{**vars(a), "warmup": 1})
        for n in names:
            train_one(n, all_args[n], task, batches[:1], primer, device, mem)
        logger.info("primed: one untimed update of every model")
        runs = {n: [] for n in names}
        for r in range(a.repeats):
            order = names[r % len(names):] + names[: r % len(names)]
            for n in order:
                res = train_one(n, all_args[n], task, batches, a, device, mem)
                runs[n].append(res)
                logger.info("[repeat %d/%d] %-24s %7.3f upd/s  %9.0f tok/s  peak %7.0f MB  loss %.3f -> %.3f",
                            r + 1, a.repeats, n, a.updates / res["seconds"], tokens / res["seconds"],
                            res["peak_mem_MB"], res["loss_first"] or 0, res["loss_last"] or 0)

        results = {}
        for n in names:
            rs = runs[n]
            ups = [a.updates / x["seconds"] for x in rs]
            results[n] = {
                "arch": all_args[n].arch, "extra_args": MODELS[n][1], "criterion": all_args[n].criterion,
                "net_input_left_out": rs[0]["net_input_left_out"],
                "params": rs[0]["params"], "params_M": rs[0]["params"] / 1e6,
                "mgsa_params_M": rs[0]["mgsa_params"] / 1e6,
                "updates_per_s": statistics.median(ups), "updates_per_s_runs": ups,
                "updates_per_s_median_step": 1 / statistics.median(x["median_step_s"] for x in rs),
                "tokens_per_s": statistics.median(tokens / x["seconds"] for x in rs),
                "sentences_per_s": statistics.median(sentences / x["seconds"] for x in rs),
                "peak_mem_MB": statistics.median(x["peak_mem_MB"] for x in rs),
                "loss_first": rs[-1]["loss_first"], "loss_last": rs[-1]["loss_last"],
            }
        base = results.get(BASELINE)
        for n, r in results.items():
            r["param_overhead_M"] = (r["params"] - base["params"]) / 1e6 if base else None
            r["speed_ratio"] = r["updates_per_s"] / base["updates_per_s"] if base else None
            r["speed_ratio_median_step"] = (r["updates_per_s_median_step"] / base["updates_per_s_median_step"]
                                            if base else None)
            r["tokens_ratio"] = r["tokens_per_s"] / base["tokens_per_s"] if base else None
            r["mem_ratio"] = r["peak_mem_MB"] / base["peak_mem_MB"] if base and base["peak_mem_MB"] else None
            r["params_ratio"] = r["params"] / base["params"] if base else None
            r["paper"] = PAPER.get(a.arch_size, {}).get(n)
        if a.interleave:
            logger.info("interleaved timing: every batch trains every model, rotating order")
            times = train_interleaved(names, all_args, task, batches, a, device)
            for n, r in results.items():
                r["interleaved_update_s"] = times[n]
                if base:
                    # total time ratio, and the median of the per-batch paired ratios
                    r["speed_ratio_interleaved"] = sum(times[BASELINE]) / sum(times[n])
                    r["speed_ratio_interleaved_median"] = statistics.median(
                        b / m for b, m in zip(times[BASELINE], times[n]))
                    logger.info("[interleaved] %-24s %7.3f upd/s  speed ratio %.3f (median paired %.3f)",
                                n, len(times[n]) / sum(times[n]), r["speed_ratio_interleaved"],
                                r["speed_ratio_interleaved_median"])
        targets = check_targets(results, a.arch_size)
        failed = [f"{n}:{t}" for n, checks in targets.items() for t, c in checks.items() if c["pass"] is False]

        profile = {}
        if a.profile:
            for n in names:
                logger.info("profiling %s", n)
                profile[n] = profile_model(n, all_args[n], task, batches, a, device)
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    import fairseq
    gi = git_info()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    dev = device_info(device)
    report = {
        "benchmark": "training throughput, identical batches (benchmarks/bench_training.py)",
        "date": now, "git_commit": gi["commit"], "git_dirty": gi["dirty"],
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "fairseq": getattr(fairseq, "__version__", "?")},
        "device": dev,
        "config": {
            "arch_size": a.arch_size, "models": names, "baseline": BASELINE, "updates": a.updates,
            "warmup": a.warmup, "max_tokens": a.max_tokens, "repeats": a.repeats,
            "fp16": a.fp16, "amp_dtype": a.amp_dtype if a.fp16 else None, "seed": a.seed, "lr": a.lr,
            "task": a.task, "data": a.data or "generated by preprocess/synthetic.py (gold trees, "
                                              f"{a.sentences_per_line} sentence(s) a line), "
                                              "mgsa-preprocess --joined-dictionary --trees-suffix tree --levels 3",
            "dictionary_size": len(task.source_dictionary), "phrases": phrases,
            "criteria": {n: all_args[n].criterion for n in names},
            "training_step": "plain loop: the model's fairseq criterion (label smoothing 0.1) forward, "
                             "backward of loss / sample_size, torch.optim.Adam(betas=(0.9, 0.98)) step; "
                             "batches on the device before timing",
            "memory_method": ("torch.cuda.max_memory_allocated (absolute)" if device.type == "cuda"
                              else mem.method),
            "timed_batches": len(timed), "timed_sentences": sentences, "timed_tokens_src_tgt": tokens,
            "speed_ratio": "model updates/s / baseline updates/s (updates / wall time of the timed updates, "
                           "median over repeats); speed_ratio_median_step: the same from the median time of "
                           "one update (robust to a machine busy with other work for part of the run)",
        },
        "paper": "Hao et al. 2019 Table 1; their vocabulary differs from ours, compare overheads and ratios",
        "models": results,
        "targets": {"definition": TARGETS, "judged_on": "speed: speed_ratio (wall time; median-step ratio "
                    "beside it); memory: mem_ratio; overhead: param_overhead_M / paper overhead_M - 1",
                    "checks": targets, "failed": failed, "all_pass": not failed},
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    if profile:
        report["profile"] = {n: {k: v for k, v in rows.items() if k != "top ops"} for n, rows in profile.items()}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    if a.history:
        line = {"date": now, "git_commit": gi["commit"], "git_dirty": gi["dirty"],
                "torch": torch.__version__, "fairseq": report["versions"]["fairseq"],
                "device": dev["name"], "device_type": dev["type"], "arch_size": a.arch_size,
                "updates": a.updates, "warmup": a.warmup, "max_tokens": a.max_tokens, "repeats": a.repeats,
                "fp16": a.fp16, "out": os.path.relpath(os.path.abspath(out), ROOT),
                "models": {n: {k: (round(r[k], 4) if isinstance(r.get(k), float) else r.get(k))
                               for k in ("updates_per_s", "speed_ratio", "speed_ratio_median_step",
                                         "speed_ratio_interleaved",
                                         "tokens_per_s", "peak_mem_MB",
                                         "params_M", "param_overhead_M")}
                           for n, r in results.items()},
                "targets_failed": failed}
        os.makedirs(os.path.dirname(os.path.abspath(a.history)), exist_ok=True)
        with open(a.history, "a") as f:
            f.write(json.dumps(line) + "\n")

    print()
    print(f"Training throughput, {a.arch_size} size, {dev['name']} ({dev['type']}), {a.updates} timed updates "
          f"(+{a.warmup} warmup), max_tokens {a.max_tokens}, {a.repeats} repeat(s), "
          f"{'autocast ' + a.amp_dtype if a.fp16 else 'fp32'}; {tokens} src+tgt tokens timed")
    print(table(results, a.arch_size))
    print(f"peak memory: {report['config']['memory_method']}")
    for n, r in results.items():
        if r["net_input_left_out"]:
            print(f"{n}: its forward takes no {', '.join(r['net_input_left_out'])}: left out of its net_input")
    if a.arch_size in PAPER:
        print("paper figures: Hao et al. 2019 Table 1 (different vocabulary: compare overheads and ratios); "
              "the paper has no n-gram + ON-LSTM row: mgsa_ngram_san_onlstm is set beside full MG-SA "
              "(syntactic + L_tag + ON-LSTM)")
    print(f"\ntargets ({'all met' if report['targets']['all_pass'] else 'not all met'}):")
    print(targets_table(targets))
    for n, rows in profile.items():
        step_ms = rows.get("model + criterion, forward + backward ms")
        print(f"\n{n}: forward + backward, mean of {a.profile_iters} (% of the whole forward + backward)")
        for k, v in rows.items():
            if k == "top ops":
                print(v)
            elif isinstance(v, float):
                print(f"  {k:60s} {v:9.2f}" + (f"  {100 * v / step_ms:5.1f}%" if step_ms else ""))
            else:
                print(f"  {k:60s} {v:>9}")
    print(f"\nwrote {out}" + (f" and a line in {a.history}" if a.history else ""))


if __name__ == "__main__":
    main()
