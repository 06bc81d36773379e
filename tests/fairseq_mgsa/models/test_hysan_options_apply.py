"""Issue 20.6: a HySAN option that would apply to nothing (a gate option without the gate,
layer lists of a stack whose branches are just `global`, strict directional masks without
directional branches, no HySAN layer at all) is refused with one line, as PBA does."""

import os
import subprocess

import pytest
from fairseq import options

import fairseq_mgsa
from fairseq_mgsa import MGSAError

USER_DIR = os.path.dirname(os.path.abspath(fairseq_mgsa.__file__))


def parse(*extra, arch="hysan_transformer"):
    return options.parse_args_and_arch(options.get_training_parser(),
                                       ["unused-data", "--user-dir", USER_DIR, "--arch", arch, *extra])


@pytest.mark.parametrize("extra,message", [
    (["--hysan-fusion", "add", "--hysan-gate-shared"],
     "--hysan-gate-shared applies to --hysan-fusion gate only (given: add)"),
    (["--hysan-fusion", "add", "--hysan-gate-shared", "--hysan-gate-reduction", "2"],
     "--hysan-gate-shared applies to --hysan-fusion gate only (given: add)"),
    (["--hysan-fusion", "concat", "--hysan-gate-reduction", "2"],
     "--hysan-gate-reduction 2 applies to --hysan-fusion gate only (given: concat)"),
    (["--hysan-encoder-branches", "global", "--hysan-decoder-branches", "global"],
     "--hysan-encoder-branches global and --hysan-decoder-branches global: no layer gets HySAN's attention; "
     "use --arch transformer for fairseq's Transformer"),
    (["--hysan-decoder-branches", "global", "--hysan-decoder-layers", "1"],
     "--hysan-decoder-layers '1' applies to nothing: --hysan-decoder-branches global keeps fairseq's attention "
     "in every decoder layer"),
    (["--hysan-encoder-branches", "global", "--hysan-encoder-layers", "2,3"],
     "--hysan-encoder-layers '2,3' applies to nothing: --hysan-encoder-branches global keeps fairseq's "
     "attention in every encoder layer"),
    (["--hysan-encoder-branches", "global,local2", "--hysan-directional-exclude-self"],
     "--hysan-directional-exclude-self applies to the encoder's forward and backward branches only, and "
     "--hysan-encoder-branches 'global,local2' has none"),
    (["--encoder-xformers-att-config", '{"name": "scaled_dot_product"}'],
     "--encoder-xformers-att-config cannot be combined with HySAN's encoder self-attention"),
    (["--hysan-encoder-branches", "global", "--hysan-directional-exclude-self"],
     "--hysan-directional-exclude-self applies to the encoder's forward and backward branches only"),
])
@pytest.mark.parametrize("arch", ["hysan_transformer", "hysan_transformer_recommended"])
def test_option_that_applies_to_nothing_is_refused(extra, message, arch):
    with pytest.raises(MGSAError) as e:
        parse(*extra, arch=arch)
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize("extra", [
    [],
    ["--hysan-fusion", "add"],  # the gate options at their defaults
    ["--hysan-fusion", "concat", "--hysan-gate-reduction", "64"],  # the default value, given explicitly
    ["--hysan-gate-shared", "--hysan-gate-reduction", "2"],
    ["--hysan-decoder-branches", "global", "--hysan-encoder-layers", "1"],  # HySAN in the encoder only
    ["--hysan-encoder-branches", "global", "--hysan-decoder-layers", "1"],  # in the decoder only
    ["--hysan-encoder-branches", "global,backward", "--hysan-directional-exclude-self"],
    ["--hysan-encoder-branches", "global", "--encoder-xformers-att-config", '{"name": "scaled_dot_product"}'],
])
def test_options_that_apply_are_accepted(extra):
    args = parse(*extra)
    assert args.arch == "hysan_transformer"


def test_the_user_gets_one_line(tmp_path):
    proc = subprocess.run(["fairseq-train", str(tmp_path), "--user-dir", USER_DIR, "--task", "translation",
                           "--arch", "hysan_transformer_recommended", "--hysan-fusion", "add", "--hysan-gate-shared",
                           "--hysan-gate-reduction", "2"],
                          capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1:] == [
        "fairseq-mgsa error: --hysan-gate-shared applies to --hysan-fusion gate only (given: add)"]
    assert "Traceback" not in proc.stderr
