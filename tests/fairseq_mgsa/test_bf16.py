"""`--bf16` means bfloat16 on the run's device, not fairseq's TPU path (fairseq_mgsa/fairseq_patches/bf16.py).

The parsed configuration is what decides the device: fairseq's trainer takes torch_xla's device
whenever `cfg.common.tpu` is true. These tests parse as fairseq-train and fairseq-generate do,
on a machine where CUDA is available (torch.cuda.is_available mocked: the parse must not depend
on the machine the suite runs on), and check the configuration the commands then run with.
"""

import pytest
import torch
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import fairseq_mgsa  # noqa: F401  (installs the wrapper, as --user-dir does)
from fairseq_mgsa.fairseq_patches import bf16

from tests.fairseq_runs import USER_DIR

MODEL = ["--task", "translation", "--arch", "transformer"]


@pytest.fixture
def cuda_machine(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bf16, "xla_available", lambda: False)


def parse_train(*flags):
    args = options.parse_args_and_arch(options.get_training_parser(),
                                       ["data-bin", "--user-dir", USER_DIR, *MODEL, *flags])
    return args, convert_namespace_to_omegaconf(args)


def parse_generate(*flags):
    args = options.parse_args_and_arch(options.get_generation_parser(),
                                       ["data-bin", "--user-dir", USER_DIR, "--task", "translation",
                                        "--path", "checkpoint_best.pt", *flags])
    return args, convert_namespace_to_omegaconf(args)


@pytest.mark.parametrize("parse", [parse_train, parse_generate], ids=["fairseq-train", "fairseq-generate"])
@pytest.mark.parametrize("flag", ["--bf16", "--memory-efficient-bf16"])
def test_bf16_keeps_the_run_off_the_tpu(cuda_machine, parse, flag):
    args, cfg = parse(flag)
    assert args.bf16 and not args.tpu
    assert cfg.common.bf16 is True and cfg.common.tpu is False
    if flag == "--memory-efficient-bf16":
        assert cfg.common.memory_efficient_bf16 is True
    # what fairseq's trainer decides from it (trainer.py: cuda unless cpu or tpu)
    assert torch.cuda.is_available() and not cfg.common.cpu and not cfg.common.tpu


@pytest.mark.parametrize("parse", [parse_train, parse_generate], ids=["fairseq-train", "fairseq-generate"])
def test_an_explicit_tpu_is_honoured(cuda_machine, parse):
    args, cfg = parse("--bf16", "--tpu")
    assert args.bf16 and args.tpu and cfg.common.tpu is True


def test_a_machine_with_torch_xla_keeps_fairseqs_tpu_path(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(bf16, "xla_available", lambda: True)
    args, cfg = parse_train("--bf16")
    assert args.tpu and cfg.common.tpu is True


def test_without_bf16_nothing_changes(cuda_machine):
    for flags, tpu in (((), False), (("--tpu",), True), (("--fp16",), False)):
        args, _ = parse_train(*flags)
        assert args.tpu is tpu and not args.bf16


def test_parse_known_and_suppressed_defaults(cuda_machine):
    """fairseq-validate's override parser (suppress_defaults) and parse_known callers."""
    args, extra = options.parse_args_and_arch(options.get_training_parser(),
                                              ["data-bin", "--user-dir", USER_DIR, *MODEL, "--bf16", "--x", "1"],
                                              parse_known=True)
    assert args.bf16 and not args.tpu and extra == ["--x", "1"]
    args = options.parse_args_and_arch(options.get_validation_parser(),
                                       ["data-bin", "--user-dir", USER_DIR, "--task", "translation", "--bf16"],
                                       suppress_defaults=True)
    # only what was given survives there (fairseq's own handling drops an implied tpu too)
    assert args.bf16 and not getattr(args, "tpu", False)


def test_the_wrapper_is_installed_once():
    wrapped = options.parse_args_and_arch
    bf16.install()
    assert options.parse_args_and_arch is wrapped and wrapped.mgsa_bf16
