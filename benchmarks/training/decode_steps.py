"""Decoding measured like training, in this process, with fairseq's own generation pipeline: FLOPs
per generated token (FlopCounterMode around `task.inference_step`, the call fairseq-generate times,
over every test batch) and paired per-batch times over interleaved rounds. Every system's checkpoint
is loaded as fairseq-generate loads it, with the same options as decoding.generate_command.
docs/benchmarks.md says what the figures count and what their intervals cover.
"""

import logging

import torch
from torch.utils.flop_counter import FlopCounterMode

from .decoding import generate_command
from .env import sync
from .timing import clock, interleaved, paired

logger = logging.getLogger("bench_training")


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
    return {"decode_flops": total, "decode_generated_tokens": tokens, "decode_flops_per_token": total / tokens,
            "decode_encoder_flops_share": encoder.get_total_flops() / total if total else None,
            "decode_flop_sentences": len(lengths)}


def time_interleaved(decoders, rounds):
    """{name: [seconds of each (round, batch)]}: every batch decoded by every system back to
    back, order rotating; one untimed pass over the batches first (the FLOP count is one)."""
    def measure(n, i):
        dec = decoders[n]
        sync(dec.device)
        seconds = clock(dec.decode, dec.batches[i])
        sync(dec.device)
        return seconds

    n_batches = len(next(iter(decoders.values())).batches)
    times = interleaved(measure, decoders, range(n_batches), rounds)
    return times


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
    times = time_interleaved(decoders, a.decode_step_rounds)
    for n, r in out.items():
        r["decode_batch_s"] = times[n]
        if baseline in times:
            pr = paired(times[n], times[baseline])
            r.update({"decode_" + k: v for k, v in pr.items()})
    return out
