"""A whole MG-SA layer and every registered system on the GPU: the layer (syntactic MG-SA at base
width: SAN composition, ON-LSTM interaction, a left-padded batch) in float32 and under float16
and bfloat16 autocast against float64 on the CPU, output and every parameter's gradient; each
system's one training update under autocast against the same update in float32; and one update
of syntactic MG-SA bitwise reproducible under torch's deterministic algorithms."""

import copy

import pytest
import torch

from fairseq_mgsa import systems as registry
from fairseq_mgsa.modules import MultiGranularitySelfAttention
from tests.fairseq_runs import USER_DIR, make_data_bin
from tests.gpu.check import invariants

from .batches import SYNTACTIC, assert_within, lengths_of_batch, relative_errors, syntactic_batch

pytestmark = pytest.mark.gpu

MODES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}




# ------------------------------------------------------------------ one MG-SA layer

def run_layer(attn, x, mask, parts, up_out, up_phrases, autocast_to=None):
    """Output, composed phrases and gradients (x, every parameter) of one layer call; the loss
    reaches the real positions and the composed phrases (what phrase-tag supervision reads)."""
    x = x.detach().requires_grad_()
    attn.zero_grad()
    with torch.autocast(x.device.type, dtype=autocast_to or torch.float32, enabled=autocast_to is not None):
        out, composed = attn(x, key_padding_mask=mask, partitions=parts)
    real = (~mask).t().unsqueeze(-1)
    phrases = composed.phrases
    ((out.to(up_out.dtype) * up_out * real).sum() + (phrases.to(up_phrases.dtype) * up_phrases).sum()).backward()
    grads = {"x": x.grad, **{n: p.grad for n, p in attn.named_parameters()}}
    return {"out": (out * real).detach(), "phrases": phrases.detach()}, grads


@pytest.mark.parametrize("mode", list(MODES))
def test_mgsa_layer_against_float64(mode, device, small, no_tf32):
    dtype = MODES[mode]
    embed, heads = 512, 8
    torch.manual_seed(0)
    attn = MultiGranularitySelfAttention(embed, heads, SYNTACTIC, composition="san", interaction="onlstm",
                                         onlstm_chunk_size=2).train()  # attention dropout 0: the default
    lengths = lengths_of_batch(4, 12, seed=0) if small else lengths_of_batch(16, 40, seed=0)
    T, B = max(lengths), len(lengths)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(T, B, embed, generator=g)
    up_out = torch.randn(T, B, embed, generator=g)
    mask, parts = syntactic_batch(lengths, seed=1, device="cpu")
    P = max(p.max_phrases for p in parts.values())
    up_phrases = torch.randn(3, B, P, embed, generator=g)

    # the reference: float64, the plain per-granularity composition and the recurrence recorded
    # step by step by autograd (the code the fast paths are tested against on the CPU)
    ref = copy.deepcopy(attn).double()
    ref.phrase_memory.compose_all_at_once = False
    ref.phrase_memory.interaction.fast = False
    ref_values, ref_grads = run_layer(ref, x.double(), mask, parts, up_out.double(), up_phrases.double())

    dev = copy.deepcopy(attn).to(device)
    if device.type == "cpu":  # the rehearsal takes the GPU's composition (a GPU picks it itself)
        dev.phrase_memory.compose_all_at_once = True
    seen = []
    forward_all = dev.phrase_memory.composition.forward_all

    def spy(x, *args):
        seen.append((x.shape, x.stride()))
        return forward_all(x, *args)
    dev.phrase_memory.composition.forward_all = spy
    mask_d, parts_d = syntactic_batch(lengths, seed=1, device=device)
    values, grads = run_layer(dev, x.to(device), mask_d, parts_d, up_out.to(device), up_phrases.to(device),
                              autocast_to=None if dtype == torch.float32 else dtype)
    # the composition saw the layer's own view of its input: T x B x C transposed, not a copy
    assert seen == [((B, T, embed), (embed, B * embed, 1))]
    for v in values.values():
        assert torch.isfinite(v).all()
    tol = TOLERANCE[dtype]
    assert_within(relative_errors(values, ref_values), tol, f"MG-SA layer {mode} output")
    assert_within(relative_errors(grads, ref_grads), tol, f"MG-SA layer {mode} gradients")


# ------------------------------------------------------------------ every system, one update

@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return str(make_data_bin(tmp_path_factory.mktemp("gpu_systems")))


@pytest.mark.parametrize("system", [s.name for s in registry.distinct_models()])
def test_one_update_under_autocast_against_float32(system, data_bin, device):
    """The whole model's gradient (flattened) of one training step under float16 and under bfloat16
    autocast against the same step in float32 (invariants.py says why that criterion), dropout
    off, at the tiny dimensions on a batch of 8 real sentences of the grammar corpus."""
    s = registry.get(system)
    task, model, criterion = invariants.build(s.train_args("tiny"), data_bin, USER_DIR, device, torch.float32,
                                              with_criterion=True)
    dataset = task.dataset("valid")
    indices = invariants.pick_sentences(dataset, 8)
    for dtype in (torch.float16, torch.bfloat16):
        result = invariants.gradient_difference(model, criterion, dataset, indices, device, dtype, autocast=True)
        assert result["backward"] <= invariants.GRADIENT_TOLERANCE[dtype], (dtype, result)
        assert result["backward_cosine"] >= invariants.MIN_COSINE, (dtype, result)


# ------------------------------------------------------------------ determinism

@pytest.fixture
def deterministic():
    saved = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(saved)


def test_one_update_of_syntactic_mgsa_is_bitwise_reproducible(data_bin, device, deterministic):
    """Built from the same seed, one training step (dropout on, the model's own) twice: the same
    loss and the same gradients, bit for bit. An operator with no deterministic implementation
    raises here (torch's check), which fails the test as well."""
    s = registry.get("mgsa_syntactic")
    runs = []
    for _ in range(2):
        task, model, criterion = invariants.build(s.train_args("tiny"), data_bin, USER_DIR, device, torch.float32,
                                                  with_criterion=True)
        model.train()
        dataset = task.dataset("valid")
        sample = dataset.collater([dataset[i] for i in invariants.pick_sentences(dataset, 8)])
        if device.type == "cuda":
            from fairseq import utils
            sample = utils.move_to_cuda(sample, device)
        torch.manual_seed(7)  # the dropout masks
        loss = criterion(model, sample)[0]
        loss.backward()
        runs.append((loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (loss_a, grads_a), (loss_b, grads_b) = runs
    assert torch.equal(loss_a, loss_b)
    assert len(grads_a) == len(grads_b) > 0
    assert all(torch.equal(a, b) for a, b in zip(grads_a, grads_b))
