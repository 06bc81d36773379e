"""Decoding speed: `fairseq-generate --beam 4` of every system on the same test sentences, each
system's own model after its timed updates, every hypothesis exactly `length` tokens long (so that
every system runs the same decoder steps; docs/benchmarks.md says why), in interleaved rounds. The
figure is fairseq-generate's own (`Translated N sentences ... (X sentences/s)`: model loading left out).
"""

import os
import re
import shlex
import statistics
import subprocess
import sys

from .timing import interleaved, speed_ratios

TRANSLATED = re.compile(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s "
                        r"\(([\d.]+) sentences/s, ([\d.]+) tokens/s\)")


def save_checkpoint(model, args, path, num_updates):
    """A checkpoint fairseq-generate loads: the model's weights and its training options
    (fairseq upgrades the `args` Namespace to its config when loading)."""
    from fairseq import checkpoint_utils

    state = {"args": args, "cfg": None, "model": model.state_dict(),
             "optimizer_history": [{"criterion_name": args.criterion, "optimizer_name": "Adam",
                                    "lr_scheduler_state": {"best": None}, "num_updates": num_updates}],
             "extra_state": {"train_iterator": {"epoch": 1, "iterations_in_epoch": num_updates}}}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    checkpoint_utils.torch_persistent_save(state, path)


def generate_command(system, data, user_dir, checkpoint, length, batch_size, device, fp16):
    return [sys.executable, "-m", "fairseq_cli.generate", data, "--user-dir", user_dir, *system.generate_args(),
            "--path", checkpoint, "--gen-subset", "test", "--beam", "4",
            "--max-len-a", "0", "--max-len-b", str(length), "--min-len", str(length),
            "--batch-size", str(batch_size), "--required-batch-size-multiple", "1",
            "--num-workers", "0", "--no-progress-bar", "--seed", "1",
            *(["--cpu"] if device.type == "cpu" else []), *(["--fp16"] if fp16 else [])]


def run_generate(cmd, env):
    """Runs fairseq-generate; returns its figures and the lengths of its hypotheses."""
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = TRANSLATED.search(proc.stdout)
    if proc.returncode != 0 or m is None:
        raise RuntimeError(f"fairseq-generate failed (exit {proc.returncode}): {shlex.join(cmd)}\n"
                           + "\n".join(proc.stdout.splitlines()[-15:]))
    n, tokens = int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))
    speed = float(m.group(4))  # n / generation time (the time itself is printed to 0.1 s only)
    lengths = [len(line.split("\t")[2].split()) for line in proc.stdout.splitlines() if line.startswith("H-")]
    return {"sentences": n, "tokens": tokens, "seconds": n / speed, "sentences_per_s": speed,
            "hypothesis_lengths": lengths}


def decode_all(systems, checkpoints, data, user_dir, a, device, length, baseline):
    """{name: figures}: `a.decode_rounds` interleaved rounds of fairseq-generate per system."""
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads or os.environ.get("OMP_NUM_THREADS", "") or 1))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(user_dir), env.get("PYTHONPATH")) if p)
    names = [s.name for s in systems]
    by_name = {s.name: s for s in systems}
    runs = interleaved(lambda n, _: run_generate(generate_command(by_name[n], data, user_dir, checkpoints[n], length,
                                                                  a.decode_batch_size, device, a.fp16), env),
                       names, [None], a.decode_rounds)
    out = {}
    for n in names:
        rs = runs[n]
        lengths = sorted({x for run in rs for x in run["hypothesis_lengths"]})
        out[n] = {"sentences": rs[0]["sentences"], "hypothesis_tokens": lengths,
                  "seconds_runs": [x["seconds"] for x in rs],
                  "sentences_per_s": statistics.median(x["sentences_per_s"] for x in rs),
                  "sentences_per_s_runs": [x["sentences_per_s"] for x in rs]}
        if baseline in runs:
            ratios = speed_ratios([x["seconds"] for x in rs], [b["seconds"] for b in runs[baseline]])
            out[n]["speed_ratio_median"] = statistics.median(ratios)
            out[n]["speed_ratio_runs"] = ratios
    return out
