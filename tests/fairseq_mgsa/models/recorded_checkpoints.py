"""Checkpoints written by an earlier version of the plugin, kept as text, and how they decode.

A change to the models or their options must leave every checkpoint users already have
loadable, decoding as it did. A test can only show that against checkpoints written by the
earlier code, so this module records them once, with that code, into a JSON file beside it
(recorded_checkpoints.json), and the test (test_recorded_checkpoints.py) loads and decodes
them with today's code.

What is recorded, for every registered system at the tiny size: the checkpoint exactly as
fairseq's Trainer writes it, except the tensors (its options, in the form the command line
gave them; the optimizer's history), the name, shape and type of every model parameter,
and the top hypothesis of each validation sentence with its score. The weights are not
stored (megabytes a system): both sides fill the parameters with values drawn from a
generator seeded by the parameter's name, so the same checkpoint decodes on both sides.
The data is the tiny corpus below, made by mgsa-preprocess; its digest is recorded, so that
a change of the data is told apart from a change of the models.

To record anew (only when the stored form is meant to change, which users' checkpoints
cannot follow), from the root of a checkout of the earlier code, with its `preprocess/`
importable as mgsa_preprocess:

    python tests/fairseq_mgsa/models/recorded_checkpoints.py OUT.json

A system registered later is added to the file, recorded with the code that registered it (the
commit goes into its entry as `recorded_at`; the file's `commit` stays that of the others):

    python tests/fairseq_mgsa/models/recorded_checkpoints.py tests/fairseq_mgsa/models/recorded_checkpoints.json --add NAME ...
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "recorded_checkpoints.json"
PLACES = ("DATA", "USER_DIR", "SAVE_DIR")  # this machine's paths in the stored options, by name
BEAM, MAX_LEN_B = 4, 12  # short hypotheses: the weights are random, few reach end-of-sentence


def make_data(out: Path) -> Path:
    """The tiny corpus (24 training, 16 validation sentences, 3 tree levels), binarized by mgsa-preprocess."""
    from subword_nmt.learn_bpe import learn_bpe

    from mgsa_preprocess.cli import main as mgsa_preprocess
    from mgsa_preprocess.synthetic import write_corpus

    raw = out / "raw"
    write_corpus(str(raw), (("train", 24), ("valid", 16)), seed=5)
    with open(raw / "train.src") as src, open(raw / "train.tgt") as tgt, open(out / "codes", "w") as codes:
        learn_bpe(list(src) + list(tgt), codes, num_symbols=40)
    mgsa_preprocess(["--source-lang", "src", "--target-lang", "tgt", "--trainpref", str(raw / "train"),
                     "--validpref", str(raw / "valid"), "--trees-suffix", "tree", "--levels", "3",
                     "--bpe-codes", str(out / "codes"), "--destdir", str(out / "data-bin"),
                     "--joined-dictionary", "--workers", "1", "--no-progress-bar"])
    return out / "data-bin"


def data_digest(data: Path) -> str:
    """sha256 over the dictionaries and the binaries (not the report, which names paths)."""
    h = hashlib.sha256()
    for f in sorted(data.iterdir()):
        if f.suffix in (".txt", ".bin", ".idx") and f.name.startswith(("dict.", "train.", "valid.")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def seeded_weights(shapes: dict) -> dict:
    """A value for every parameter, drawn from a generator seeded by its name."""
    weights = {}
    for name, (shape, dtype) in shapes.items():
        g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        weights[name] = (torch.randn(shape, generator=g) * 0.3).to(getattr(torch, dtype))
    return weights


def to_text(value, paths: dict):
    """The checkpoint's non-tensor entries as JSON values; argparse.Namespace (fairseq's form of
    an argparse-configured model's options) is kept as {"__namespace__": {...}}."""
    if isinstance(value, argparse.Namespace):
        return {"__namespace__": to_text(vars(value), paths)}
    if isinstance(value, dict):
        return {k: to_text(v, paths) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_text(v, paths) for v in value]
    if isinstance(value, str):
        for place, path in paths.items():
            value = value.replace(path, "{" + place + "}")
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    raise TypeError(f"a {type(value).__name__} in a checkpoint's options: {value!r}")


def from_text(value, paths: dict):
    if isinstance(value, dict):
        if set(value) == {"__namespace__"}:
            return argparse.Namespace(**from_text(value["__namespace__"], paths))
        return {k: from_text(v, paths) for k, v in value.items()}
    if isinstance(value, list):
        return [from_text(v, paths) for v in value]
    if isinstance(value, str):
        for place, path in paths.items():
            value = value.replace("{" + place + "}", path)
    return value


def write_checkpoint(recorded: dict, path: Path, paths: dict) -> None:
    """The recorded checkpoint with the seeded weights, as a file fairseq loads."""
    from fairseq import checkpoint_utils

    state = from_text(recorded["state"], paths)
    state["model"] = seeded_weights(recorded["parameters"])
    checkpoint_utils.torch_persistent_save(state, str(path))


def decode(checkpoint: Path, data: Path) -> list:
    """[[id, hypothesis tokens, score]] for the validation split, in id order."""
    from fairseq import checkpoint_utils

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)],
                                                                      arg_overrides={"data": str(data)})
    for model in models:
        model.eval()
    task.load_dataset("valid")
    generator = task.build_generator(models, argparse.Namespace(beam=BEAM, max_len_a=0, max_len_b=MAX_LEN_B))
    batches = task.get_batch_iterator(dataset=task.dataset("valid"), max_sentences=8).next_epoch_itr(shuffle=False)
    out = []
    with torch.no_grad():
        for sample in batches:
            for i, hypos in zip(sample["id"].tolist(), task.inference_step(generator, models, sample)):
                best = hypos[0]
                out.append([i, task.target_dictionary.string(best["tokens"]), float(best["score"])])
    return sorted(out)


def record_system(system, data: Path, workdir: Path, user_dir: str) -> dict:
    """Build the system at the tiny size as fairseq-train does, write its checkpoint with fairseq's
    Trainer, and decode it with the seeded weights."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    save_dir = workdir / system.name
    save_dir.mkdir()
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data), "--user-dir", user_dir, *system.train_args("tiny"), "--optimizer", "adam", "--lr", "1e-3",
        "--max-tokens", "400", "--cpu", "--seed", "1", "--save-dir", str(save_dir), "--num-workers", "0"])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    path = save_dir / "checkpoint_last.pt"
    trainer.consolidate_optimizer()  # as fairseq-train does before it saves
    trainer.save_checkpoint(str(path), {})
    state = torch.load(str(path), map_location="cpu", weights_only=False)
    parameters = {k: [list(v.shape), str(v.dtype).replace("torch.", "")] for k, v in state.pop("model").items()}
    state.pop("last_optimizer_state", None)
    paths = {"DATA": str(data), "USER_DIR": user_dir, "SAVE_DIR": str(save_dir)}
    recorded = {"state": to_text(state, paths), "parameters": parameters}
    seeded = save_dir / "seeded.pt"
    write_checkpoint(recorded, seeded, paths)
    recorded["hypotheses"] = decode(seeded, data)
    return recorded


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the JSON file to write")
    parser.add_argument("--add", nargs="+", metavar="NAME",
                        help="record only these systems into OUT, an existing record, keeping the others")
    a = parser.parse_args(argv)
    sys.path.insert(0, os.getcwd())  # the checkout being recorded, not this file's
    from fairseq_mgsa import systems as registry

    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        data = make_data(Path(tmp) / "corpus")
        if a.add:
            with open(a.out) as f:
                out = json.load(f)
            if out["data_sha256"] != data_digest(data):
                parser.error(f"{a.out} was recorded on other data than this checkout makes: record every system anew")
            chosen = [registry.get(name) for name in a.add]
        else:
            out = {"commit": commit, "data_sha256": data_digest(data), "beam": BEAM, "max_len_b": MAX_LEN_B,
                   "systems": {}}
            chosen = list(registry.SYSTEMS.values())
        for system in chosen:
            print(f"recording {system.name}", flush=True)
            out["systems"][system.name] = record_system(system, data, Path(tmp), os.path.abspath("fairseq_mgsa"))
            if a.add:
                out["systems"][system.name]["recorded_at"] = commit
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
