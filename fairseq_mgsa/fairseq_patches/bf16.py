"""`--bf16` trains in bfloat16 on the device the run uses (a CUDA GPU, or the CPU), not on a TPU.

fairseq 0.12 reads `--bf16` (and `--memory-efficient-bf16`, which implies it) as "bfloat16 on
a TPU": `options.parse_args_and_arch` sets `args.tpu = True` whenever bf16 is on, and the
trainer then asks torch_xla for its device and dies at update 0 on a CUDA GPU
("'NoneType' object has no attribute 'xla_device'"; fairseq's issue 4696). Nothing else in
fairseq ties bf16 to a TPU: its trainer casts the model, the criterion and the batches' float
tensors to bfloat16 on any device, and FP16Optimizer / MemoryEfficientFP16Optimizer keep fp32
master weights with no loss scaler for bf16. fairseq-hydra-train's config path never implied
the TPU.

So the plugin wraps `parse_args_and_arch`: after fairseq's own post-processing, a `tpu` that
only bf16 implied is turned off again, unless the run is a TPU run: `--tpu` given, or torch_xla
importable (a TPU machine keeps fairseq's behaviour). fairseq's commands import the plugin
(`--user-dir`, read by `get_parser`) before they parse, so the wrapper is in place for
fairseq-train, -generate, -interactive and -validate; Python code that parses fairseq options
itself imports fairseq_mgsa first.
"""

import argparse
import functools
import importlib.util
import logging
import sys

from fairseq import options

logger = logging.getLogger(__name__)


def tpu_requested(input_args) -> bool:
    """Whether the command line asks for a TPU itself (`--tpu`; fairseq's parsers take no
    abbreviations)."""
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("--tpu", action="store_true")
    args, _ = p.parse_known_args(sys.argv[1:] if input_args is None else input_args)
    return args.tpu


def xla_available() -> bool:
    return importlib.util.find_spec("torch_xla") is not None


def bf16_on_run_device(args, input_args):
    """Turns off the TPU that fairseq inferred from --bf16 alone (see the module's docstring)."""
    if getattr(args, "bf16", False) and getattr(args, "tpu", False) \
            and not tpu_requested(input_args) and not xla_available():
        args.tpu = False
        import torch
        device = "cpu" if getattr(args, "cpu", False) or not torch.cuda.is_available() else "cuda"
        logger.info("--bf16: bfloat16 on %s (fairseq 0.12 would take its TPU path)", device)
    return args


def install():
    """Wraps fairseq.options.parse_args_and_arch once (its callers look it up at call time)."""
    original = options.parse_args_and_arch
    if getattr(original, "mgsa_bf16", False):
        return

    @functools.wraps(original)
    def parse_args_and_arch(parser, input_args=None, parse_known=False, suppress_defaults=False,
                            modify_parser=None):
        out = original(parser, input_args=input_args, parse_known=parse_known,
                       suppress_defaults=suppress_defaults, modify_parser=modify_parser)
        bf16_on_run_device(out[0] if parse_known else out, input_args)
        return out

    parse_args_and_arch.mgsa_bf16 = True
    options.parse_args_and_arch = parse_args_and_arch
