"""The fused attention paths on the GPU against float64 references on the CPU, at the model's
widths: the SAN phrase composition (san_attention.py) under the SDPA backend torch picks and
under each one forced, and HySAN's fused branches with its gated sum (hybrid_attention.py,
branch_fusion.py). Outputs and every gradient, in float32, float16 and bfloat16.

Inputs and weights are rounded to the tested dtype first and the float64 reference computes
with those same numbers: a difference is the computation's. Errors are relative to the largest
float64 value of each tensor (batches.relative_errors), within the float type's tolerance
(float32 with TF32 off: what is left is the order of summation)."""

import contextlib
import copy

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from fairseq_mgsa.modules import MultiGranularitySelfAttention
from fairseq_mgsa.modules.hysan.attention import HybridMultiheadAttention, parse_branches

from .batches import SYNTACTIC, assert_within, lengths_of_batch, padding_mask, relative_errors, rounded, \
    syntactic_batch

pytestmark = pytest.mark.gpu

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}
SIZES = {"base": (512, 8), "big": (1024, 16)}  # embed dim, heads (fairseq's transformer, _big)




def batch_lengths(small):
    return lengths_of_batch(4, 12, seed=0) if small else lengths_of_batch(16, 40, seed=0)


# ------------------------------------------------------------------ the SAN composition

def model_composition(size):
    """The SAN composition as syntactic MG-SA builds it at `size` (its phrase memory's)."""
    embed, heads = SIZES[size]
    torch.manual_seed(0)
    attn = MultiGranularitySelfAttention(embed, heads, SYNTACTIC, composition="san", interaction="onlstm")
    return attn.phrase_memory.composition


def test_the_composition_widths_are_the_models():
    """C is the model's width, D the width of a granularity's heads: 8 heads over 4 granularities
    at base (2 x 64), 16 at big (4 x 64); 3 phrase granularities."""
    assert model_composition("base").q_weight.shape == (3, 128, 512)
    assert model_composition("big").q_weight.shape == (3, 256, 1024)


BACKENDS = ["default", "MATH", "EFFICIENT_ATTENTION", "FLASH_ATTENTION", "CUDNN_ATTENTION"]
# the composition's path on a GPU (san_attention.py): memory-efficient attention takes its mask
# and its values wider than its keys; the math path takes anything. Flash attention takes no
# mask, cuDNN's may not take these widths: those may say "No available kernel" (a skip)
MUST_RUN = {"default", "MATH", "EFFICIENT_ATTENTION"}


def backend_context(name):
    if name == "default":
        return contextlib.nullcontext()
    if not hasattr(SDPBackend, name):
        pytest.skip(f"torch {torch.__version__} has no SDPA backend {name}")
    return sdpa_kernel(getattr(SDPBackend, name))


def composition_case(size, dtype, small):
    """(float64 composition, x: T x B x C (the layer's input), phrase_index, P, upstream), all in
    numbers of `dtype`."""
    comp = model_composition(size).double()
    with torch.no_grad():
        for p in comp.parameters():
            p.copy_(rounded(p, dtype))
    lengths = batch_lengths(small)
    mask, parts = syntactic_batch(lengths, seed=1, device="cpu")
    phrase_index = torch.stack([parts[g].phrase_index for g in ("syn1", "syn2", "syn3")])
    P = max(p.max_phrases for p in parts.values())
    C = comp.q_weight.size(-1)
    g = torch.Generator().manual_seed(2)
    x = rounded(torch.randn(mask.size(1), len(lengths), C, dtype=torch.float64, generator=g), dtype)
    upstream = rounded(torch.randn(3, len(lengths), P, C, dtype=torch.float64, generator=g), dtype)
    return comp, x, phrase_index, P, upstream


def run_composition(comp, forward, x_tbc, phrase_index, P, upstream):
    """Output and gradients (x, then the weights) of one composition call on the layer's own view
    of its input: query.transpose(0, 1), B x T x C, not contiguous."""
    x_tbc = x_tbc.detach().requires_grad_()
    comp.zero_grad()
    out = getattr(comp, forward)(x_tbc.transpose(0, 1), phrase_index, P)
    (out * upstream).sum().backward()
    return out.detach(), {"x": x_tbc.grad, **{n: p.grad for n, p in comp.named_parameters()}}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("size", list(SIZES))
def test_san_composition_against_float64(size, dtype, backend, device, small, no_tf32):
    dtype = DTYPES[dtype]
    comp, x, phrase_index, P, upstream = composition_case(size, dtype, small)
    ref, ref_grads = run_composition(comp, "forward_all_reference", x, phrase_index, P, upstream)
    dev = copy.deepcopy(comp).to(device, dtype)
    try:
        with backend_context(backend):
            out, grads = run_composition(dev, "forward_all", x.to(device, dtype), phrase_index.to(device), P,
                                         upstream.to(device, dtype))
    except RuntimeError as e:
        # CUDA's words for a backend that cannot take the inputs, the CPU's for one it does not have,
        # and cuDNN's frontend refusing them (a refusal, not a wrong number: those fail below)
        refused = ("No available kernel", "No viable backend") + (("cuDNN", "cudnn") if backend == "CUDNN_ATTENTION"
                                                                  else ())
        if not any(words in str(e) for words in refused):
            raise
        if backend in MUST_RUN and device.type == "cuda":
            pytest.fail(f"SDPA backend {backend} must take the composition's inputs on a GPU: {e}")
        where = "on the CPU (rehearsal; the GPU run tries it)" if device.type == "cpu" else "for these inputs"
        pytest.skip(f"SDPA backend {backend} has no kernel {where}: {str(e).splitlines()[0]}")
    assert out.dtype == dtype and out.shape == ref.shape
    assert torch.isfinite(out).all()
    member = (phrase_index.unsqueeze(2) == torch.arange(P).view(P, 1)).any(-1)  # Gr x B x P
    assert not member.all() and (out.cpu()[~member] == 0).all()  # empty slots exactly 0
    tol = TOLERANCE[dtype]
    assert_within(relative_errors({"out": out}, {"out": ref}), tol, f"{size} {backend} output")
    assert_within(relative_errors(grads, ref_grads), tol, f"{size} {backend} gradients")


# ------------------------------------------------------------------ HySAN

HYSAN = {  # as the hysan system builds its layers (the recommended configuration, hysan_transformer.py)
    "encoder": dict(branches="global,forward,backward,local2", causal=False, left=True),
    "decoder": dict(branches="global,local2", causal=True, left=False),
}


def hysan_case(side, dtype, small):
    """(float64 module, x: T x B x C, padding mask, attn_mask, upstream) in numbers of `dtype`, at
    base width with the recommended gate (reduction 64)."""
    cfg = HYSAN[side]
    embed, heads = SIZES["base"]
    torch.manual_seed(0)
    module = HybridMultiheadAttention(embed, heads, parse_branches(cfg["branches"], cfg["causal"], "--test"),
                                      fusion="gate", gate_reduction=64, causal=cfg["causal"]).double().train()
    with torch.no_grad():
        for p in module.fusion.parameters():  # the gates away from their initial values (every term shows)
            p.add_(0.1 * torch.randn_like(p))
        for p in module.parameters():
            p.copy_(rounded(p, dtype))
    lengths = batch_lengths(small)
    pad = padding_mask(lengths, left=cfg["left"])
    T, B = pad.size(1), pad.size(0)
    g = torch.Generator().manual_seed(3)
    x = rounded(torch.randn(T, B, embed, dtype=torch.float64, generator=g), dtype)
    upstream = rounded(torch.randn(T, B, embed, dtype=torch.float64, generator=g), dtype)
    # fairseq's decoder mask (buffered_future_mask)
    attn_mask = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), 1) if cfg["causal"] else None
    return module, x, pad, attn_mask, upstream


def run_hysan(module, x, pad, attn_mask, upstream, explicit):
    """Output and gradients of the fused path (training's) or the explicit one (asked for weights:
    fairseq's scores, one softmax over the stacked masks, the gate recorded by autograd). The loss
    reaches real positions only, as in the model: a padding query whose allowed keys are all
    padding is junk in any path (hybrid_attention.py)."""
    x = x.detach().requires_grad_()
    module.zero_grad()
    module.fusion.fast = not explicit
    out = module(x, x, x, key_padding_mask=pad, attn_mask=attn_mask, need_weights=explicit)[0]
    real = (~pad).t().unsqueeze(-1)
    (out * upstream * real).sum().backward()
    return out.detach() * real, {"x": x.grad, **{n: p.grad for n, p in module.named_parameters()}}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("side", list(HYSAN))
def test_hysan_fused_attention_and_gated_sum_against_float64(side, dtype, device, small, no_tf32):
    dtype = DTYPES[dtype]
    module, x, pad, attn_mask, upstream = hysan_case(side, dtype, small)
    ref, ref_grads = run_hysan(module, x, pad, attn_mask, upstream, explicit=True)
    dev = copy.deepcopy(module).to(device, dtype)
    out, grads = run_hysan(dev, x.to(device, dtype), pad.to(device),
                           None if attn_mask is None else attn_mask.to(device, dtype), upstream.to(device, dtype),
                           explicit=False)
    assert out.dtype == dtype and torch.isfinite(out).all()
    assert_within(relative_errors({"out": out}, {"out": ref}), TOLERANCE[dtype], f"hysan {side} output")
    # bfloat16's gradients against the module's largest: rounding moves the gate's hidden
    # pre-activations across the ReLU's kink, and sums that cancel (the projections' weights)
    # keep their terms' error. On the CPU (batch 4, base width) the gate's f1 gradient is 17% off
    # its own largest value in every path (fused or explicit, GatedSum or autograd's: a property of
    # the format), 3.8e-2 of the module's largest; float16's worst is 1e-3 of its own
    own = dtype != torch.bfloat16
    tol = 1e-1 if dtype == torch.bfloat16 else TOLERANCE[dtype]
    assert_within(relative_errors(grads, ref_grads, own_scale=own), tol, f"hysan {side} gradients")
