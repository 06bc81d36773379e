"""The SAN composition of every granularity in one fused attention call (san_attention.py)
against the segment arithmetic beside it (SANComposition.forward_all_reference): outputs and
gradients in float64 on left- and right-padded batches with one-token phrases, empty slots
and ties in the max-pooling, gradcheck, half precision, and the operators it launches."""

import copy

import pytest
import torch

from fairseq_mgsa.modules import SANComposition, ngram_partition, spans_to_partition
from fairseq_mgsa.modules.mgsa.composition import segment_max
from fairseq_mgsa.modules.mgsa.san_attention import SlotMax, phrase_slots, san_attention

C, D = 8, 4
LENGTHS = [7, 1, 4, 6]  # tokens with EOS: a sentence of EOS alone among them


def padding_mask(left):
    T = max(LENGTHS)
    mask = torch.ones(len(LENGTHS), T, dtype=torch.bool)
    for b, n in enumerate(LENGTHS):
        mask[b, T - n:] = False if left else True
        if not left:
            mask[b, :n] = False
    return mask


def phrases(mask, G):
    """Gr x B x T phrase of every token and the slots P: unigrams (one-token phrases), a
    syntactic level with one- and three-token phrases, 3-grams (fewer phrases: empty slots)."""
    syntactic = spans_to_partition(torch.tensor([[1, 3, 2], [0, 0, 0], [1, 2, 0], [3, 1, 1]]),
                                   torch.tensor([3, 0, 2, 3]), mask)
    parts = [ngram_partition(mask, 1), syntactic, ngram_partition(mask, 3)][:G]
    return torch.stack([p.phrase_index for p in parts]), max(p.max_phrases for p in parts)


def composition(G, seed=0, dtype=torch.float64, widths=(C, D)):
    torch.manual_seed(seed)
    comp = SANComposition(G, *widths).to(dtype)
    with torch.no_grad():  # biases away from zero, so that every term of the gradient shows
        for p in comp.parameters():
            p.uniform_(-1, 1)
    return comp


def tokens(mask, ties, dtype=torch.float64, width=C):
    if ties:  # small integers: phrases tie at their max, some at exactly 0
        return torch.randint(-2, 3, (*mask.shape, width)).to(dtype).requires_grad_()
    return torch.randn(*mask.shape, width, dtype=dtype, requires_grad=True)


def run(comp, forward, x, phrase_index, P, upstream):
    x.grad = None
    comp.zero_grad()
    out = forward(x, phrase_index, P)
    (out * upstream).sum().backward()
    return out.detach(), [x.grad.clone()] + [p.grad.clone() for p in comp.parameters()]


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("G", [1, 3])
@pytest.mark.parametrize("left", [True, False], ids=["left-pad", "right-pad"])
def test_fused_composition_equals_the_segment_reference(left, G, ties):
    mask = padding_mask(left)
    phrase_index, P = phrases(mask, G)
    comp, x = composition(G), tokens(mask, ties)
    upstream = torch.randn(G, len(LENGTHS), P, C, dtype=torch.float64)
    out, grads = run(comp, comp.forward_all, x, phrase_index, P, upstream)
    ref, ref_grads = run(comp, comp.forward_all_reference, x, phrase_index, P, upstream)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    # empty slots are exactly 0, and there are some (sentences shorter than P, 3-grams)
    member = (phrase_index.unsqueeze(2) == torch.arange(P).view(P, 1)).any(-1)  # Gr x B x P
    assert not member.all() and (out[~member] == 0).all()
    for got, want in zip(grads, ref_grads):
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_phrase_slots():
    """Each token in its phrase's slot, padding in its sentence's slot 0, and the membership."""
    mask = padding_mask(left=True)
    phrase_index, P = phrases(mask, 3)
    index, member = phrase_slots(phrase_index, P)
    B = len(LENGTHS)
    for g in range(3):
        for b in range(B):
            for t in range(mask.size(1)):
                p = int(phrase_index[g, b, t])
                assert int(index[g, b, t]) == b * (P + 1) + 1 + p  # p = -1: slot 0
                assert member[g, b, :, t].tolist() == [q == p for q in range(P)]


def test_no_attention_row_is_fully_masked(monkeypatch):
    """What a backend makes of a row with no key differs (NaN, 0): empty slots attend to every
    token instead, and are zeroed after."""
    from fairseq_mgsa.modules.mgsa import san_attention as module

    seen, attend = [], module.F.scaled_dot_product_attention

    def spy(*args, attn_mask, **kwargs):
        seen.append(attn_mask)
        return attend(*args, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(module.F, "scaled_dot_product_attention", spy)
    mask = padding_mask(left=False)
    phrase_index, P = phrases(mask, 3)
    composition(3).forward_all(tokens(mask, ties=False), phrase_index, P)
    assert len(seen) == 1 and seen[0].dtype == torch.bool and seen[0].any(dim=-1).all()


def test_slot_max_gradient_is_torch_scatter_reduce_gradient():
    """Value for value, ties and maxima of exactly 0 included (torch's own accounting)."""
    torch.manual_seed(0)
    N, G, S = 12, 2, 5
    x = torch.randint(-2, 3, (N, C)).double().requires_grad_()
    index = torch.randint(0, S - 1, (G, N))  # slot S - 1 stays empty
    upstream = torch.randn(G, S, C, dtype=torch.float64)
    out = SlotMax.apply(x, index, S)
    (grad,) = torch.autograd.grad((out * upstream).sum(), x)
    ref = x.new_zeros(G, S, C).scatter_reduce(1, index.unsqueeze(-1).expand(G, N, C), x.expand(G, N, C),
                                              reduce="amax", include_self=False)
    (ref_grad,) = torch.autograd.grad((ref * upstream).sum(), x)
    assert torch.equal(out, ref) and torch.equal(grad, ref_grad)
    # the reference's own segment_max, one granularity at a time
    assert torch.equal(out[1], segment_max(x, index[1], S))


def test_fused_composition_passes_gradcheck():
    mask = padding_mask(left=True)[:, :5]  # the first three sentences fit: [7, 1, 4] -> 5 columns
    mask[0] = False
    phrase_index, P = phrases(mask, 3)
    comp = composition(3)
    x = torch.randn(*mask.shape, C, dtype=torch.float64, requires_grad=True)
    params = [p.detach().clone().requires_grad_() for p in comp.parameters()]
    assert torch.autograd.gradcheck(lambda x, *w: san_attention(x, phrase_index, P, *w, comp.scaling),
                                    (x, *params))


@pytest.mark.parametrize("mode", ["float16", "bfloat16"])
def test_fused_composition_in_half_precision_is_close_to_the_float64_reference(mode):
    """float16 as fp16 training runs it (module and inputs cast), bfloat16 under autocast;
    errors relative to the largest float64 output and gradient (test_half_precision.py)."""
    mask = padding_mask(left=True)
    phrase_index, P = phrases(mask, 3)
    comp, x = composition(3), tokens(mask, ties=False)
    upstream = torch.randn(3, len(LENGTHS), P, C, dtype=torch.float64)
    ref, ref_grads = run(comp, comp.forward_all_reference, x, phrase_index, P, upstream)
    if mode == "float16":
        half, xh = copy.deepcopy(comp).half(), x.detach().half().requires_grad_()
        out, grads = run(half, half.forward_all, xh, phrase_index, P, upstream.half())
        assert out.dtype == torch.float16
        out_tol, grad_tol = 5e-3, 5e-3
    else:
        bf, xf = copy.deepcopy(comp).float(), x.detach().float().requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, grads = run(bf, bf.forward_all, xf, phrase_index, P, upstream.float())
        out_tol, grad_tol = 2e-2, 4e-2
    assert (out.double() - ref).abs().max() <= out_tol * ref.abs().max()
    scale = max(g.abs().max() for g in ref_grads)
    for got, want in zip(grads, ref_grads):
        assert torch.isfinite(got).all()
        assert (got.double() - want).abs().max() <= grad_tol * scale


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_fused_composition_takes_memory_efficient_attention_on_cuda(dtype):
    """With SDPA restricted to memory-efficient attention (it raises where the inputs do not
    qualify), close to the float64 reference. Widths the kernel's alignment takes (D % 8)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    mask = padding_mask(left=True)
    phrase_index, P = phrases(mask, 3)
    comp, x = composition(3, widths=(32, 8)), tokens(mask, ties=False, width=32)
    upstream = torch.randn(3, len(LENGTHS), P, 32, dtype=torch.float64)
    ref, ref_grads = run(comp, comp.forward_all_reference, x, phrase_index, P, upstream)
    gpu, xg = copy.deepcopy(comp).to("cuda", dtype), x.detach().to("cuda", dtype).requires_grad_()
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        out, grads = run(gpu, gpu.forward_all, xg, phrase_index.cuda(), P, upstream.to("cuda", dtype))
    tol = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 4e-2}[dtype]
    assert (out.double().cpu() - ref).abs().max() <= tol * ref.abs().max()
    scale = max(g.abs().max() for g in ref_grads)
    for got, want in zip(grads, ref_grads):
        assert torch.isfinite(got).all()
        assert (got.double().cpu() - want).abs().max() <= tol * scale


def test_fused_composition_launches_fewer_operators():
    """Forward and backward, counted as benchmarks/op_counts counts them (on the CPU the
    attention takes the math path, where D != C: the GPU's is one fused kernel each way)."""
    from benchmarks.op_counts import count

    mask = padding_mask(left=True)
    phrase_index, P = phrases(mask, 3)
    comp, x = composition(3, dtype=torch.float32), tokens(mask, ties=False, dtype=torch.float32)

    def step(forward):
        comp.zero_grad()
        x.grad = None
        forward(x, phrase_index, P).sum().backward()

    ops = {}
    for name in ("forward_all", "forward_all_reference"):
        step(getattr(comp, name))
        _, ops[name] = count(step, getattr(comp, name))
        assert ops[name]["host_syncs"] == 0
    fused, reference = ops["forward_all"]["kernel_ops"], ops["forward_all_reference"]["kernel_ops"]
    assert fused <= 0.72 * reference, (fused, reference, ops["forward_all"]["by_op"])


def test_use_fast_path_false_runs_the_segment_reference():
    """SANComposition(use_fast_path=False).forward_all is san_attention_ref (no attention call),
    which gives the per-granularity `forward`'s numbers."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from fairseq_mgsa.modules.mgsa.composition import token_slots
    from fairseq_mgsa.modules.mgsa.san_attention import san_attention_ref

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.add(func.name())
            return func(*args, **(kwargs or {}))

    mask = padding_mask(True)
    phrase_index, P = phrases(mask, 3)
    fast = composition(3)
    comp = SANComposition(3, C, D, use_fast_path=False).double()
    comp.load_state_dict(fast.state_dict())
    x = tokens(mask, False).detach()
    with Seen() as seen:
        out = comp.forward_all(x, phrase_index, P)
    assert not any("attention" in n for n in seen.names), seen.names
    assert torch.equal(out, san_attention_ref(x, phrase_index, P, comp.q_weight, comp.q_bias, comp.k_weight,
                                              comp.k_bias, comp.scaling))
    index, S = token_slots(phrase_index, P)
    B = len(LENGTHS)
    flat = x.reshape(-1, C)
    for j in range(3):  # granularity by granularity, the module's own `forward`
        want = comp(flat, index[j], S, granularity=j)[:B * P].view(B, P, C)
        torch.testing.assert_close(out[j], want, atol=1e-12, rtol=1e-12)
