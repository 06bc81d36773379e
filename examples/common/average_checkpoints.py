"""Average the parameters of the last N checkpoints of a fairseq run (Vaswani et al. 2017:
the last 5 for base models, the last 20 for big ones).

    python average_checkpoints.py CHECKPOINT_DIR --num 5 --output OUTPUT.pt
    python average_checkpoints.py --inputs a.pt b.pt c.pt --output OUTPUT.pt

Why not fairseq's scripts/average_checkpoints.py: it lives in fairseq's source tree and
is not installed by `pip install fairseq` (nor fairseq-fixed): site-packages holds
only the `fairseq` and `fairseq_cli` packages. (Under torch >= 2.6 it would also fail to
load the checkpoints: see below.) This does the same: parameters summed in float32
(half-precision checkpoints from --fp16 training included), divided by N, stored as
float32 in the state of the newest input, which fairseq-generate loads like any checkpoint.

The checkpoints are picked among CHECKPOINT_DIR/checkpoint_{epoch}_{updates}.pt
(--save-interval-updates) by update count; without those, among checkpoint{epoch}.pt;
without those, checkpoint_last.pt alone. checkpoint_last.pt joins them when it is further
on than all of them (see pick()). Fewer than N found: all of them, with a warning.

Under torch >= 2.6 torch.load only accepts the classes on its allow-list (weights_only=True
by default). A fairseq checkpoint holds a few more (argparse.Namespace; numpy arrays when
trained with --eval-bleu): this script adds exactly those, with the list of
fairseq_mgsa/fairseq_patches/checkpoint_loading.py, which it runs by path (importing the plugin package
would import all of fairseq), and leaves the protection on for everything else.
"""

import argparse
import collections
import os
import re
import sys

import importlib.util

import torch


PATCH = os.path.join("fairseq_patches", "checkpoint_loading.py")  # inside the fairseq_mgsa package


def load_allow_list():
    """Run fairseq_mgsa/fairseq_patches/checkpoint_loading.py (beside this repository's examples, or
    the installed package's) without importing the fairseq_mgsa package."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fairseq_mgsa")
    if not os.path.isfile(os.path.join(here, PATCH)):
        found = importlib.util.find_spec("fairseq_mgsa")  # finds the package without running it
        if found is None or not found.submodule_search_locations:
            sys.exit("average_checkpoints.py: error: fairseq_mgsa not found: run it from the repository or "
                     "install fairseq-mgsa")
        here = list(found.submodule_search_locations)[0]
    spec = importlib.util.spec_from_file_location("mgsa_checkpoint_loading", os.path.join(here, PATCH))
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


load_allow_list()


def num_updates(path):
    """The update count a checkpoint was saved at (read lazily where torch can map the file)."""
    try:
        state = torch.load(path, map_location="cpu", mmap=True)
    except (TypeError, RuntimeError):  # older torch, or a file that cannot be mapped
        state = torch.load(path, map_location="cpu")
    try:
        return int(state["optimizer_history"][-1]["num_updates"])
    except (KeyError, IndexError, TypeError):
        sys.exit(f"average_checkpoints.py: error: {path} is not a fairseq training checkpoint (no update count)")


def pick(directory, num):
    """The newest `num` checkpoints of a run, oldest first.

    fairseq writes checkpoint_{epoch}_{updates}.pt every --save-interval-updates, except
    when that update ends an epoch: then (with --no-epoch-checkpoints) only
    checkpoint_last.pt holds it. So checkpoint_last.pt counts as the newest checkpoint
    when it is further on than every numbered one, which is how a run that stops at the
    end of an epoch still has its final model averaged.
    """
    names = os.listdir(directory)
    last = os.path.join(directory, "checkpoint_last.pt")
    for pattern in (r"checkpoint_\d+_(\d+)\.pt$", r"checkpoint(\d+)\.pt$"):
        found = sorted(((int(m.group(1)), n) for n in names for m in [re.match(pattern, n)] if m), reverse=True)
        if not found:
            continue
        chosen = [os.path.join(directory, n) for _, n in found]
        if os.path.exists(last) and num_updates(last) > num_updates(chosen[0]):
            chosen.insert(0, last)
        chosen = chosen[:num]
        if len(chosen) < num:
            print(f"average_checkpoints.py: warning: {directory} holds {len(chosen)} checkpoints of this kind, "
                  f"not {num}: averaging those", file=sys.stderr)
        return chosen[::-1]
    if os.path.exists(last):
        print(f"average_checkpoints.py: warning: no numbered checkpoints in {directory}: using checkpoint_last.pt "
              f"alone", file=sys.stderr)
        return [last]
    sys.exit(f"average_checkpoints.py: error: no checkpoints in {directory}")


def average(paths):
    total, state, averaged = collections.OrderedDict(), None, set()
    for path in paths:
        if not os.path.isfile(path):
            sys.exit(f"average_checkpoints.py: error: {path} not found")
        try:
            state = torch.load(path, map_location="cpu")
        except Exception as e:  # truncated file, not a checkpoint
            sys.exit(f"average_checkpoints.py: error: {path}: cannot load it as a checkpoint: "
                     f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        if not isinstance(state, dict) or "model" not in state:
            sys.exit(f"average_checkpoints.py: error: {path} is not a fairseq checkpoint (no 'model' entry)")
        model = state["model"]
        if total and set(model) != set(total):
            sys.exit(f"average_checkpoints.py: error: {path} has other parameters than {paths[0]}")
        for key, value in model.items():
            if not torch.is_floating_point(value):
                total[key] = value  # integer buffers: the newest checkpoint's
                continue
            averaged.add(key)
            value = value.float()
            total[key] = total[key] + value if key in total else value.clone()
    for key in averaged:
        total[key] = total[key] / len(paths)
    state["model"] = total
    return state


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", nargs="?", help="the run's checkpoint directory")
    p.add_argument("--output", required=True, help="the averaged checkpoint")
    p.add_argument("--num", type=int, default=5, help="how many of the newest checkpoints (default 5)")
    p.add_argument("--inputs", nargs="+", help="average these files instead")
    a = p.parse_args(argv)
    if bool(a.source) == bool(a.inputs):
        p.error("give either a checkpoint directory or --inputs")
    if a.num < 1:
        p.error("--num must be at least 1")
    if a.source and not os.path.isdir(a.source):
        sys.exit(f"average_checkpoints.py: error: {a.source} is not a directory")
    paths = a.inputs or pick(a.source, a.num)
    print("averaging " + ", ".join(os.path.basename(x) for x in paths), file=sys.stderr)
    state = average(paths)
    tmp = a.output + ".partial"
    torch.save(state, tmp)
    os.replace(tmp, a.output)
    print(f"-> {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
