"""Train-and-decode runs: fairseq-train then fairseq-generate of one system in one precision,
in this process (fairseq_cli's own main functions, the code the commands run: one interpreter
start for a whole phase instead of two a run), each checked and written as one record.

Checked for every run: the training loss falls (the last logged loss at most LOSS_FALL times
the first), no loss is NaN or infinite, fp16's loss scaler never reached its minimum ("Minimum
loss scale reached"), the updates fp16 skipped on a gradient overflow are counted (more than
MAX_SKIPPED of them fail the run), and fairseq-generate writes one hypothesis for every test
line (--required-batch-size-multiple 1: fairseq drops a last batch smaller than the multiple).
"""

import gc
import logging
import math
import os
import re
import time
import traceback
from dataclasses import dataclass
from typing import List

from fairseq_mgsa import systems as registry
from fairseq_mgsa.clean_exit import stop_prefetching_threads

LOSS_FALL = 0.9     # the last logged training loss must be <= this times the first
MAX_SKIPPED = 0.1   # fp16 overflow skips allowed, as a share of the updates
OVERFLOW = "gradient overflow detected"
MIN_SCALE = "Minimum loss scale reached"
BF16_ON_DEVICE = "--bf16: bfloat16 on "  # fairseq_mgsa/bf16.py's log line


@dataclass(frozen=True)
class Run:
    phase: str
    system: str
    precision: str   # fp16, bf16, memory-efficient-fp16
    size: str = "base"

    @property
    def name(self) -> str:
        return f"{self.precision}/{self.system}" + ("" if self.size == "base" else f"@{self.size}")


def phase_runs(phase: str) -> List[Run]:
    """fp16: every registered system at base size but the depth variants (their originals' modules);
    variants: syntactic MG-SA in bf16, with fairseq's memory-efficient fp16 optimizer, and at big
    size in fp16."""
    if phase == "fp16":
        return [Run("fp16", s.name, "fp16") for s in registry.distinct_models()]
    if phase == "variants":
        return [Run("variants", "mgsa_syntactic", "bf16"),
                Run("variants", "mgsa_syntactic", "memory-efficient-fp16"),
                Run("variants", "mgsa_syntactic", "fp16", size="big")]
    raise ValueError(f"unknown phase {phase!r} (fp16, variants)")


def precision_flags(precision: str, cpu: bool):
    """(fairseq-train flags, fairseq-generate flags, what actually ran). On the CPU (the dry run):
    fp16 needs --fp16-no-flatten-grads (the flat fp32 copy is made with torch.cuda.current_device);
    bf16 trains in bfloat16 there too (the plugin keeps --bf16 off fairseq's TPU path,
    fairseq_mgsa/bf16.py)."""
    device = ["--cpu"] if cpu else []
    if precision == "fp16":
        return ["--fp16", *device, *(["--fp16-no-flatten-grads"] if cpu else [])], ["--fp16", *device], "fp16"
    if precision == "memory-efficient-fp16":
        return ["--memory-efficient-fp16", *device], ["--fp16", *device], precision
    if precision == "bf16":
        # fairseq-generate has no bf16 path (it casts for --fp16 only): it decodes in fp32
        return ["--bf16", *device], device, "bf16 (decoded in fp32: fairseq-generate has no bf16 path)"
    raise ValueError(f"unknown precision {precision!r}")


def system_args(name, size, dims=None):
    """The system's fairseq-train options at `size`; with `dims` (the dry run's "tiny"), at those
    dimensions instead: the base size's own tiny options, or the big architecture at the tiny
    dimensions."""
    system = registry.get(name)
    if not dims:
        return system.train_args(size)
    if size == "base":
        return system.train_args(dims)
    return system.train_args(size) + list(registry.DIMS[dims])


def train_argv(run: Run, data, user_dir, save_dir, s):
    """fairseq-train's options for `run` with the settings `s` (settings.py)."""
    size_args = system_args(run.system, run.size, s.dims)
    train_flags, _, _ = precision_flags(run.precision, s.cpu)
    return [data, "--user-dir", user_dir, *size_args, "--share-all-embeddings",
            "--label-smoothing", "0.1", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
            "--lr", str(s.lr), "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(s.warmup),
            "--dropout", "0.1", "--max-tokens", str(s.max_tokens), "--max-update", str(s.updates),
            "--seed", "1", "--log-format", "json", "--log-interval", str(s.log_interval), "--no-progress-bar",
            # one checkpoint, saved once at the end (its validation is the first and so the best)
            "--save-dir", save_dir, "--no-epoch-checkpoints", "--no-last-checkpoints", "--no-save-optimizer-state",
            "--save-interval", "1000000", "--validate-interval", "1000000", "--num-workers", "0",
            *train_flags]


def generate_argv(run: Run, data, user_dir, checkpoint, results, s):
    _, generate_flags, _ = precision_flags(run.precision, s.cpu)
    return [data, "--user-dir", user_dir, *registry.get(run.system).generate_args(), "--path", checkpoint,
            "--gen-subset", "test", "--beam", "4", "--batch-size", str(s.decode_batch),
            "--max-len-a", "1.5", "--max-len-b", "10",  # an untrained model's hypotheses stop there
            "--required-batch-size-multiple", "1", "--num-workers", "0", "--no-progress-bar",
            "--results-path", results, *generate_flags]


class Capture(logging.Handler):
    """Every log line of a run, to its log file and kept for the checks."""

    def __init__(self, path):
        super().__init__()
        self.file = open(path, "w", encoding="utf-8")
        self.lines = []
        self.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s"))

    def emit(self, record):
        line = self.format(record)
        self.lines.append(line)
        self.file.write(line + "\n")
        self.file.flush()

    def close(self):
        self.file.close()
        super().close()


def parse_training_log(lines):
    """Per-interval training figures from fairseq's json log lines ("train_inner")."""
    import json

    inner = []
    for line in lines:
        if "| train_inner |" in line:
            inner.append(json.loads(line.split("| train_inner | ", 1)[1]))
    return inner


def as_float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def epoch_updates(lines):
    """The update count of fairseq's end-of-epoch json lines ("train"): the last epoch's is the
    run's last update, which the per-interval lines miss when --max-update is not a multiple of
    --log-interval (64 updates logged every 10: the last inner line says 60)."""
    import json

    counts = [0]
    for line in lines:
        if "| train | " in line:
            counts.append(int(as_float(json.loads(line.split("| train | ", 1)[1]).get("train_num_updates", 0)) or 0))
    return max(counts)


def training_figures(lines, updates):
    inner = parse_training_log(lines)
    losses = [as_float(x.get("loss")) for x in inner]
    skipped = sum(OVERFLOW in line for line in lines)
    valid = [line for line in lines if "| valid |" in line]
    valid_loss = None
    if valid:
        import json
        valid_loss = as_float(json.loads(valid[-1].split("| valid | ", 1)[1]).get("valid_loss"))
    scales = [as_float(x["loss_scale"]) for x in inner if "loss_scale" in x]
    return {"losses": losses, "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None, "valid_loss": valid_loss,
            "overflow_skips": skipped, "loss_scale_last": scales[-1] if scales else None,
            "updates_done": max(int(inner[-1]["num_updates"]) if inner else 0, epoch_updates(lines)),
            "min_loss_scale_reached": any(MIN_SCALE in line for line in lines)}


def problems_of(fig, updates, hyps=None, n_test=None):
    out = []
    bad = [x for x in fig["losses"] + [fig["valid_loss"]] if x is not None and not math.isfinite(x)]
    if bad:
        out.append("loss not finite")
    if fig["min_loss_scale_reached"]:
        out.append("minimum loss scale reached")
    if fig["updates_done"] < updates:
        out.append(f"stopped at update {fig['updates_done']} of {updates}")
    if fig["overflow_skips"] > MAX_SKIPPED * updates:
        out.append(f"{fig['overflow_skips']} fp16 overflow skips in {updates} updates")
    if fig["loss_first"] is not None and math.isfinite(fig["loss_first"]) and not \
            fig["loss_last"] <= LOSS_FALL * fig["loss_first"]:
        out.append(f"loss did not fall ({fig['loss_first']:.3f} -> {fig['loss_last']:.3f})")
    if len(fig["losses"]) < 2:
        out.append("fewer than two logged training losses")
    if n_test is not None and hyps != n_test:
        out.append(f"{hyps} hypotheses for {n_test} test lines")
    return out


def read_hypotheses(path):
    """(distinct sentence ids with a hypothesis, all hypothesis scores finite, BLEU line)."""
    ids, finite, bleu = set(), True, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("H-"):
                sid, score, _ = line.rstrip("\n").split("\t", 2)
                ids.add(int(sid[2:]))
                finite &= math.isfinite(float(score))
            elif line.startswith("Generate test"):
                bleu = line.strip()
    return ids, finite, bleu


def bleu_of(line):
    m = re.search(r"BLEU4? = ([\d.]+)", line or "")
    return float(m.group(1)) if m else None


def run_one(run: Run, data, user_dir, out_dir, s, n_test):
    """Trains and decodes `run`; returns its record (never raises for a failure of the run)."""
    from fairseq import checkpoint_utils, options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq_cli import generate as fairseq_generate
    from fairseq_cli import train as fairseq_train

    run_dir = os.path.join(out_dir, "runs", run.name.replace("/", "_").replace("@", "_"))
    os.makedirs(run_dir, exist_ok=True)
    _, _, ran_as = precision_flags(run.precision, s.cpu)
    rec = {"kind": "run", "phase": run.phase, "name": run.name, "system": run.system, "size": run.size,
           "dims": s.dims or run.size, "precision": run.precision, "ran_as": ran_as, "updates": s.updates,
           "log": os.path.relpath(os.path.join(run_dir, "train.log"), out_dir)}
    root = logging.getLogger()
    capture = Capture(os.path.join(run_dir, "train.log"))
    root.addHandler(capture)
    t0 = time.perf_counter()
    error = None
    try:
        argv = train_argv(run, data, user_dir, run_dir, s)
        capture.file.write("fairseq-train " + " ".join(argv) + "\n")
        args = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
        # the best-checkpoint score is kept on the function between runs in one process
        if hasattr(checkpoint_utils.save_checkpoint, "best"):
            del checkpoint_utils.save_checkpoint.best
        fairseq_train.main(convert_namespace_to_omegaconf(args))
    except BaseException as e:  # noqa: B036  (a failed run is a result; KeyboardInterrupt still ends it)
        if isinstance(e, KeyboardInterrupt):
            raise
        error = f"training: {type(e).__name__}: {e}"
        capture.file.write(traceback.format_exc())
    finally:
        root.removeHandler(capture)
        capture.close()
    rec["train_s"] = round(time.perf_counter() - t0, 1)
    # a run stopped inside its epoch leaves fairseq's batch thread building batches: it must
    # not build them during the next run's timing
    stop_prefetching_threads()
    fig = training_figures(capture.lines, s.updates)
    # fairseq raises it (FloatingPointError) rather than logging it
    fig["min_loss_scale_reached"] |= MIN_SCALE in (error or "")
    rec.update({k: v for k, v in fig.items() if k != "losses"})
    rec["losses"] = [round(x, 3) if math.isfinite(x) else str(x) for x in fig["losses"]]

    hyps = None
    checkpoint = os.path.join(run_dir, "checkpoint_best.pt")
    if error is None:
        t1 = time.perf_counter()
        gen_capture = Capture(os.path.join(run_dir, "generate.log"))
        root.addHandler(gen_capture)
        try:
            gargv = generate_argv(run, data, user_dir, checkpoint, run_dir, s)
            gen_capture.file.write("fairseq-generate " + " ".join(gargv) + "\n")
            gargs = options.parse_args_and_arch(options.get_generation_parser(), input_args=gargv)
            fairseq_generate.main(gargs)
            ids, finite, bleu = read_hypotheses(os.path.join(run_dir, "generate-test.txt"))
            hyps = len(ids)
            rec.update({"hypotheses": hyps, "test_lines": n_test, "bleu": bleu_of(bleu),
                        "hypothesis_scores_finite": finite})
            if not finite:
                error = "generation: a hypothesis score is not finite"
        except BaseException as e:  # noqa: B036
            if isinstance(e, KeyboardInterrupt):
                raise
            error = f"generation: {type(e).__name__}: {e}"
            gen_capture.file.write(traceback.format_exc())
        finally:
            root.removeHandler(gen_capture)
            gen_capture.close()
        rec["generate_s"] = round(time.perf_counter() - t1, 1)
    problems = ([error] if error else []) + problems_of(fig, s.updates, hyps if error is None else None,
                                                        n_test if error is None else None)
    if run.precision == "bf16":
        on = [line.split(BF16_ON_DEVICE, 1)[1].split(" ")[0] for line in capture.lines if BF16_ON_DEVICE in line]
        rec["bf16_device"] = on[0] if on else None
        if not on:
            problems.append("--bf16 did not say it trained on the run's device (fairseq_mgsa/bf16.py)")
    rec["problems"] = problems
    rec["status"] = "pass" if not problems else "FAIL"
    rec["device_error"] = bool(error) and any(k in error for k in ("CUDA error", "device-side assert",
                                                                   "CUBLAS_STATUS", "cuDNN error"))
    if os.path.exists(checkpoint) and not s.keep_checkpoints:
        os.remove(checkpoint)  # hundreds of MB at base size; the logs and hypotheses stay
    gc.collect()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass
    return rec
