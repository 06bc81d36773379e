"""The phrase-interaction recurrence's three paths at every width a user can configure: the
persistent loop kernel, the per-step Triton cells (a torch loop of one product and one fused
cell a step), and the torch step loop (MGSA_NO_TRITON=1), forward and backward, timed with
CUDA events on identical inputs. Also what the loop kernel's compilation needs: shared memory
per block, registers and spilled bytes per thread (the compiled kernel's metadata).

    python -m benchmarks.recurrence_paths [--out DIR]           # on a CUDA GPU
    python -m benchmarks.recurrence_paths --out DIR --dry-run   # the code path on the CPU, tiny

The widths are those of the heads a granularity feeds, 128 (base) to 1024 (all 16 heads of the
big model in one). One JSON line a measurement into DIR/recurrence_paths.jsonl as it ends (a cut
run keeps them); DIR defaults to benchmarks/runs/recurrence_paths/.
"""

import argparse
import json
import os
import statistics

import torch

from fairseq_mgsa.ops import recurrence as recurrence_loops, recurrence_path as recurrence_cells

from benchmarks.run_outputs import default_out, git_info
from benchmarks.timing import timed_update

WIDTHS = [128, 256, 512, 768, 1024]


def gates(D, chunk_size):
    return 4 * D + (2 * (D // chunk_size) if chunk_size else 0)


def inputs(Gr, B, P, D, chunk_size, dtype, device):
    g = torch.Generator(device="cpu").manual_seed(0)
    K = gates(D, chunk_size)
    xg = torch.randn(Gr, B, P, K, generator=g).to(device, dtype)
    w = (torch.randn(Gr, K, D, generator=g) / D ** 0.5).to(device, dtype)
    d_out = torch.randn(Gr, B, P, D, generator=g).to(device, dtype)
    return xg, w, d_out


def path_functions(path, chunk_size):
    """(forward(xg, w), backward(z, c, w, d_out)) of one path, each returning its outputs."""
    if path == "loop":
        from fairseq_mgsa.ops.triton import recurrence_loop as k
        if chunk_size:
            return (lambda xg, w: k.onlstm_recurrence(xg, w, chunk_size),
                    lambda z, c, w, d: k.onlstm_recurrence_backward(z, c, w, d, chunk_size))
        return k.lstm_recurrence, k.lstm_recurrence_backward
    return (lambda xg, w: recurrence_loops.recurrence_torch(xg, w, chunk_size),
            lambda z, c, w, d: recurrence_loops.recurrence_backward_torch(z, c, w, d, chunk_size))


def timed(fn, reps, device):
    """Median milliseconds of fn() over reps calls after 2 warm ones, each by timing.timed_update
    (between CUDA events on a GPU)."""
    for _ in range(2):
        fn()
    return 1000 * statistics.median(timed_update(lambda _: fn(), None, device) for _ in range(reps))


def compiled_info(kernel):
    """Shared memory, registers and spills of the kernel's compilations so far."""
    info = []
    for cache in getattr(kernel, "device_caches", {}).values():
        for compiled in cache[0].values():
            info.append(dict(shared=compiled.metadata.shared, regs=getattr(compiled, "n_regs", None),
                             spills=getattr(compiled, "n_spills", None), warps=compiled.metadata.num_warps))
    return info


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=default_out("recurrence_paths"), help="folder of recurrence_paths.jsonl")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    p.add_argument("--dtypes", default="fp16,bf16,fp32")
    return p


def main(argv=None):
    a = get_parser().parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    device = torch.device("cpu" if a.dry_run else "cuda")
    widths = [8, 16] if a.dry_run else [int(w) for w in a.widths.split(",")]
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    # B about a 4k-token batch's sentences; P: a granularity's phrases (the tree's top levels,
    # n-grams of a 27-token sentence) and a long one
    shapes = [(4, 2, 3)] if a.dry_run else [(160, 16, 0), (32, 200, 0)]
    paths = ["cells", "torch"] if a.dry_run else ["loop", "cells", "torch"]
    commit = git_info()["commit"]  # every line names the code it measured
    out = open(os.path.join(a.out, "recurrence_paths.jsonl"), "a")
    for D in widths:
        Gr = max(1, {128: 3, 256: 3}.get(D, 1))
        for kind, cs in (("onlstm", 2), ("lstm", 0)):
            for dname in a.dtypes.split(","):
                dtype = dtypes[dname]
                for B, P, _ in shapes:
                    xg, w, d_out = inputs(Gr, B, P, D, cs, dtype, device)
                    row = dict(D=D, Gr=Gr, kind=kind, dtype=dname, B=B, P=P, device=str(device), git_commit=commit)
                    for path in paths:
                        os.environ["MGSA_NO_TRITON"] = "1" if path == "torch" else "0"
                        try:
                            fwd, bwd = path_functions(path, cs)
                            _, z, c, _ = fwd(xg, w)
                            row[path + "_fwd_ms"] = round(timed(lambda: fwd(xg, w), a.reps, device), 4)
                            row[path + "_bwd_ms"] = round(timed(lambda: bwd(z, c, w, d_out), a.reps, device), 4)
                        except Exception as e:  # noqa: BLE001 (recorded: a path that fails is a result)
                            row[path + "_error"] = f"{type(e).__name__}: {e}"[:400]
                    os.environ.pop("MGSA_NO_TRITON", None)
                    if "loop" in paths and "loop_error" not in row:
                        from fairseq_mgsa.ops.triton import recurrence_loop as k
                        fk = k._onlstm_loop_fwd if cs else k._lstm_loop_fwd
                        bk = k._onlstm_loop_bwd if cs else k._lstm_loop_bwd
                        row["loop_fwd_compiled"], row["loop_bwd_compiled"] = compiled_info(fk), compiled_info(bk)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(json.dumps(row), flush=True)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        out.write(json.dumps(dict(device=props.name, smem_optin=getattr(props, "shared_memory_per_block_optin", None),
                                  cells=recurrence_cells.triton_kernels(xg) is not None)) + "\n")
    out.close()


if __name__ == "__main__":
    main()
