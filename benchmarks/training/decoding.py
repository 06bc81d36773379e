"""Decoding speed, measured like training: every system's own model after its timed updates, loaded
and run as `fairseq-generate --beam 4` loads and runs it (its options, `task.inference_step`, the
call fairseq-generate times), in this process. FLOPs per generated token (FlopCounterMode over every
test batch), then paired per-batch times over interleaved rounds; every hypothesis exactly `length`
tokens long, so that every system runs the same decoder steps. docs/benchmarks.md says what the
figures count and what their intervals cover.
"""

import logging
import os
import sys

import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.timing import interleaved, paired, synced_seconds

logger = logging.getLogger("bench_training")


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


class Decoder:
    """One system's models, generator and test batches, as fairseq-generate builds them."""

    def __init__(self, system, data, user_dir, checkpoint, length, batch_size, device, fp16):
        from fairseq import checkpoint_utils, options, tasks, utils
        from fairseq.dataclass.utils import convert_namespace_to_omegaconf

        argv = generate_command(system, data, user_dir, checkpoint, length, batch_size, device, fp16)[3:]
        cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_generation_parser(), argv))
        self.task = tasks.setup_task(cfg.task)
        self.models, saved_cfg = checkpoint_utils.load_model_ensemble(
            utils.split_paths(cfg.common_eval.path), task=self.task)
        self.task.load_dataset(cfg.dataset.gen_subset, task_cfg=saved_cfg.task)
        for model in self.models:
            if fp16:
                model.half()
            model.to(device)
            model.prepare_for_inference_(cfg)
        itr = self.task.get_batch_iterator(
            dataset=self.task.dataset(cfg.dataset.gen_subset), max_tokens=cfg.dataset.max_tokens,
            max_sentences=cfg.dataset.batch_size,
            max_positions=utils.resolve_max_positions(self.task.max_positions(),
                                                      *[m.max_positions() for m in self.models]),
            required_batch_size_multiple=cfg.dataset.required_batch_size_multiple, seed=cfg.common.seed,
            num_workers=0).next_epoch_itr(shuffle=False)
        self.batches = [utils.move_to_cuda(b) if device.type == "cuda" else b for b in itr if "net_input" in b]
        self.generator = self.task.build_generator(self.models, cfg.generation)
        self.device = device

    def decode(self, batch):
        """The best hypotheses' token counts (end-of-sentence included) of one batch."""
        with torch.no_grad():
            hypos = self.task.inference_step(self.generator, self.models, batch)
        return [len(h[0]["tokens"]) for h in hypos]


def count_flops(dec):
    """FLOPs of decoding the whole test split, per generated token, and the encoder's share
    (counted again alone: the encoder call beam search makes once per batch)."""
    with FlopCounterMode(display=False) as counter:
        lengths = [n for batch in dec.batches for n in dec.decode(batch)]
    with FlopCounterMode(display=False) as encoder, torch.no_grad():
        for batch in dec.batches:
            for model in dec.models:
                model.encoder.forward_torchscript(batch["net_input"])
    total, tokens = counter.get_total_flops(), sum(lengths)
    return {"sentences": len(lengths), "hypothesis_tokens": sorted({n - 1 for n in lengths}),  # eos left out
            "decode_flops": total, "decode_generated_tokens": tokens, "decode_flops_per_token": total / tokens,
            "decode_encoder_flops_share": encoder.get_total_flops() / total if total else None}


def measure(systems, checkpoints, data, user_dir, a, device, length, baseline):
    """{name: figures} for the systems: FLOPs per generated token and the paired time ratios."""
    decoders = {s.name: Decoder(s, data, user_dir, checkpoints[s.name], length, a.decode_batch_size, device, a.fp16)
                for s in systems}
    sizes = {n: [len(b["id"]) for b in d.batches] for n, d in decoders.items()}
    if len({tuple(v) for v in sizes.values()}) != 1:
        raise RuntimeError(f"decoding batches differ between systems: {sizes}")
    out = {}
    for n, dec in decoders.items():
        out[n] = count_flops(dec)
        logger.info("[decode FLOPs] %-24s %.4f GFLOP per generated token (encoder %.0f%%)", n,
                    out[n]["decode_flops_per_token"] / 1e9, 100 * (out[n]["decode_encoder_flops_share"] or 0))
    # every batch decoded by every system back to back, order rotating (the FLOP count was the warm-up)
    n_batches = len(next(iter(sizes.values())))  # the same for every system (checked above)
    times = interleaved(lambda n, i: synced_seconds(lambda: decoders[n].decode(decoders[n].batches[i]), device),
                        decoders, range(n_batches), a.decode_rounds)
    for n, r in out.items():
        r["decode_batch_s"] = times[n]
        r["sentences_per_s"] = r["sentences"] * a.decode_rounds / sum(times[n])
        if baseline in times:
            pr = paired(times[n], times[baseline])
            r.update({"decode_" + k: v for k, v in pr.items()})
            r["speed_ratio_median"] = pr["speed_ratio_interleaved_median"]
    return out
