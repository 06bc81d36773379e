"""Peak training memory on CPU, every system in a process of its own, with MALLOC_MMAP_THRESHOLD_=131072
so that freed tensors leave the resident set: in the benchmark's own process glibc's heap, fragmented
by the models before, moved a model's figure by 30% (docs/benchmarks.md, "Peak memory"). The figure:
the growth of the peak resident set (env.CpuPeakMemory) over the model's building and the own run's
updates, i.e. parameters, Adam's state, gradients and the peak of live activations.

    python -m benchmarks.training.memory '{"train_argv": [...], ...}'   (run by bench_training.py)
"""

import json
import os
import subprocess
import sys

from benchmarks.run_outputs import ROOT

MARK = "PEAK_MEM_JSON "
METHOD = ("VmHWM growth in a process of its own per system (MALLOC_MMAP_THRESHOLD_=131072: tensors of "
          "128 KiB or more are mmapped, freed memory leaves the resident set), over the model's building "
          "and the own run's batches")


def measure(train_argv, batch_argv, n_updates, a):
    """Peak MB of `n_updates` updates of the system of `train_argv` on the first batches of
    `batch_argv`'s task, in a subprocess."""
    cfg = {"train_argv": train_argv, "batch_argv": batch_argv, "updates": n_updates, "lr": a.lr,
           "threads": a.threads}
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072",
               OMP_NUM_THREADS=str(a.threads or os.environ.get("OMP_NUM_THREADS", "") or 1))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "benchmarks.training.memory", json.dumps(cfg)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError("the memory measurement failed (exit %d):\n%s"
                           % (proc.returncode, "\n".join(proc.stdout.splitlines()[-15:])))
    return json.loads(lines[-1][len(MARK):])["peak_mem_MB"]


def main():
    import argparse

    import torch

    from benchmarks.training import data as bdata
    from benchmarks.training.env import CpuPeakMemory
    from benchmarks.training.update import train_one

    cfg = json.loads(sys.argv[1])
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    device = torch.device("cpu")
    task, batches = bdata.build_batches(bdata.parse(cfg["batch_argv"]), cfg["updates"], device)
    args = bdata.parse(cfg["train_argv"])
    # every update untimed ("warmup"): only the memory is wanted
    a = argparse.Namespace(warmup=len(batches), lr=cfg["lr"], fp16=False, amp_dtype=None)
    result = train_one(args, task, batches, a, device, CpuPeakMemory())
    print(MARK + json.dumps({"peak_mem_MB": result["peak_mem_MB"]}), flush=True)


if __name__ == "__main__":
    main()
