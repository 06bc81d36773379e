"""Invariants of a whole model, for every registered system, on any device and float type: the
GPU check runs them on the GPU in half precision (test_invariants.py), tests/benchmarks/test_system_invariants.py on the CPU in
float32 and float16.

* incremental decoding: fairseq's beam search feeds the decoder one token a step with its
  incremental state, and between steps reorders the hypotheses within each sentence's beam
  (copies and drops: reorder_incremental_state, reorder_encoder_out) and drops the rows of a
  sentence that finished. Every step's output must equal the full (teacher-forced) decoder
  forward of the reordered prefixes;
* padding: a sentence's translation scores must be the same in a left-padded batch (fairseq's
  default for sources), in a right-padded batch and alone.

* the backward: one training step's gradients (the criterion's loss on a real batch, dropout
  off) in the half float type against the same step in float32 (gradient_difference below).

Inputs are real batches of the grammar corpus's valid split through the mgsa_translation task
(phrase fields included, left out for models that do not read them). Differences are the largest
absolute difference of the decoder's output (logits) over real target positions, relative to
the largest absolute logit of the reference: within TOLERANCE of the float type. In float32 they
are rounding only (about 1e-6); a wrong mask, a padding leak or a misordered state gives
differences of the order of the logits themselves.
"""

import torch

TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def parse(train_args, data, user_dir, seed=1):
    """The fairseq-train options of the system whose options are `train_args`, on `data`, read
    through the mgsa_translation task."""
    from fairseq import options

    return options.parse_args_and_arch(options.get_training_parser(), input_args=[
        data, "--user-dir", user_dir, *train_args, "--task", "mgsa_translation", "--share-all-embeddings",
        "--seed", str(seed)])


def build(train_args, data, user_dir, device, dtype, seed=1, with_criterion=False):
    """(task with the valid split loaded, model in eval mode on `device` in `dtype`) of the system
    whose fairseq-train options are `train_args`, read through the mgsa_translation task; with
    with_criterion, also the system's criterion."""
    from fairseq import tasks

    args = parse(train_args, data, user_dir, seed)
    task = tasks.setup_task(args)
    task.load_dataset("valid", combine=False, epoch=1)
    torch.manual_seed(seed)
    model = task.build_model(args).to(device=device, dtype=dtype).eval()
    if with_criterion:
        return task, model, task.build_criterion(args).to(device)
    return task, model


def pick_sentences(dataset, n):
    """n sentences of different source lengths (longest, shortest and between): padding matters."""
    order = sorted(range(len(dataset)), key=lambda i: (int(dataset.dataset.src_sizes[i]), i))
    step = max(1, (len(order) - 1) // max(1, n - 1))
    return sorted({order[min(k * step, len(order) - 1)] for k in range(n)} | {order[-1]})[:n]


def collate(dataset, indices, device, left_pad=True):
    """A batch of `indices` padded on the left (fairseq's default) or the right; in index order."""
    inner = dataset.dataset
    saved = inner.left_pad_source
    inner.left_pad_source = left_pad
    try:
        batch = dataset.collater([dataset[i] for i in indices])
    finally:
        inner.left_pad_source = saved
    order = batch["id"].argsort()
    net = {k: (v[..., order] if k == "src_phrase_counts" else v[:, order] if k == "src_phrase_lengths"
               else v[order]) for k, v in batch["net_input"].items()}
    from fairseq import utils
    return utils.move_to_cuda(net, device) if device.type == "cuda" else net, batch["target"][order].to(device)


def encoder_input(model, net):
    """The net_input keys the model's encoder takes (phrase fields only for those that read them)."""
    import inspect

    params = inspect.signature(model.encoder.forward).parameters
    keys = ("src_tokens", "src_lengths", "src_phrase_lengths", "src_phrase_counts")
    return {k: net[k] for k in keys if k in net and (k in params or k in ("src_tokens", "src_lengths"))}


def relative(got, ref):
    scale = ref.float().abs().max().clamp_min(1e-6)
    return ((got.float() - ref.float()).abs().max() / scale).item()


@torch.no_grad()
def padding_difference(model, dataset, tgt_dict, indices, device):
    """Largest relative difference of a sentence's decoder output between the left-padded batch,
    the right-padded batch and the sentence alone."""
    left, target = collate(dataset, indices, device, left_pad=True)
    right, _ = collate(dataset, indices, device, left_pad=False)
    prev = left["prev_output_tokens"]
    real = target.ne(tgt_dict.pad())

    def decode(net, prev_tokens):
        enc = model.encoder(**encoder_input(model, net))
        return model.decoder(prev_tokens, encoder_out=enc)[0]

    out_left, out_right = decode(left, prev), decode(right, prev)
    worst = relative(out_right[real], out_left[real])
    for b, i in enumerate(indices):
        alone, _ = collate(dataset, [i], device)
        m = int(real[b].sum())
        out_alone = decode(alone, alone["prev_output_tokens"])[0, :m]
        # the target is right-padded: its first m positions are the sentence's
        worst = max(worst, relative(out_left[b, :m], out_alone))
    return worst


@torch.no_grad()
def incremental_difference(model, dataset, tgt_dict, indices, device, beam=3, steps=8, seed=0):
    """Beam search's use of the decoder without its scoring: every sentence `beam` rows (sentence-
    major, as fairseq's generator expands them), every step a random reorder within each beam,
    and half-way the first sentence finishes (its rows dropped). Largest relative difference of a
    step's incremental output from the full forward of the same prefixes."""
    net, _ = collate(dataset, indices, device)
    g = torch.Generator().manual_seed(seed)
    vocab, eos = len(tgt_dict), tgt_dict.eos()
    if hasattr(model.decoder, "set_beam_size"):
        model.decoder.set_beam_size(beam)  # as fairseq's sequence generator does
    try:
        enc = model.encoder(**encoder_input(model, net))
        rows = torch.arange(len(indices)).repeat_interleave(beam).to(device)
        enc = model.encoder.reorder_encoder_out(enc, rows)
        prefix = torch.full((len(rows), 1), eos, dtype=torch.long, device=device)
        state, worst = {}, 0.0
        for t in range(steps):
            step = model.decoder(prefix, encoder_out=enc, incremental_state=state)[0][:, -1]
            full = model.decoder(prefix, encoder_out=enc)[0][:, -1]
            worst = max(worst, relative(step, full))
            sentences = prefix.size(0) // beam
            keep = torch.arange(1 if t == steps // 2 and sentences > 1 else 0, sentences)
            new_order = (keep[:, None] * beam + torch.randint(0, beam, (len(keep), beam), generator=g)).view(-1)
            new_order = new_order.to(device)
            model.decoder.reorder_incremental_state_scripting(state, new_order)
            enc = model.encoder.reorder_encoder_out(enc, new_order)
            tokens = torch.randint(4, vocab, (len(new_order), 1), generator=g).to(device)
            prefix = torch.cat([prefix[new_order], tokens], 1)
    finally:
        if hasattr(model.decoder, "set_beam_size"):
            model.decoder.set_beam_size(1)
    return worst


# The backward's criterion, on the flattened gradient of every parameter (one vector): its error
# relative to the float32 vector's length, and the cosine of the two. Per parameter it would be
# noise: some gradients are zero in exact arithmetic (a key projection's bias under softmax, whose
# shift cancels) or are sums that cancel, and half precision leaves them rounding of their terms'
# size. The whole vector is the update the optimizer takes: a wrong backward anywhere that matters
# (a mask, a kernel's gradient, a cast) moves it by the order of its own length; rounding by far
# less (on the CPU at the tests' dimensions, every system: float16 1e-3 to 7.5e-3, bfloat16 5e-3 to
# 1.4e-2, cosines above 0.9999).
GRADIENT_TOLERANCE = {torch.float32: 1e-4, torch.float16: 3e-2, torch.bfloat16: 1e-1}
MIN_COSINE = 0.99
FP16_LOSS_SCALE = 128.0  # fairseq's initial loss scale (--fp16-init-scale): small gradients stay above float16's


def no_dropout(model):
    """Every dropout of the model off (fairseq's modules and torch's), so that the steps compared
    compute the same function."""
    from fairseq.modules.fairseq_dropout import FairseqDropout

    for m in model.modules():
        if isinstance(m, (FairseqDropout, torch.nn.Dropout)):
            m.p = 0.0
    return model


def step_gradients(model, criterion, sample, dtype=None, autocast=False):
    """The flattened gradient (float32) of one training step's loss: the model in its own dtype, or
    under autocast to `dtype`; float16 with fairseq's initial loss scale, halved and the step
    taken again while the gradient overflows, as fairseq's loss scaler does (an update it skips is
    not a wrong gradient; one that overflows at every scale down to 1 is returned as it is)."""
    half = dtype if autocast else next(model.parameters()).dtype
    scale = FP16_LOSS_SCALE if half == torch.float16 else 1.0
    device = next(model.parameters()).device
    while True:
        model.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype, enabled=autocast):
            loss = criterion(model, sample)[0]
        (loss * scale).backward()
        grads = torch.cat([p.grad.float().flatten() / scale if p.grad is not None
                           else torch.zeros(p.numel(), device=device) for p in model.parameters()])
        model.zero_grad(set_to_none=True)
        if scale <= 1.0 or torch.isfinite(grads).all():
            return grads
        scale /= 2


def compare_gradients(got, ref):
    """(error of the flattened gradient relative to the reference's length, cosine of the two)."""
    got, ref = got.double(), ref.double()
    if not torch.isfinite(got).all():
        return float("inf"), float("nan")
    rel = ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    cos = torch.nn.functional.cosine_similarity(got, ref, dim=0).item()
    return rel, cos


def gradient_difference(model, criterion, dataset, indices, device, dtype, autocast=False):
    """One training step on the batch of `indices` (train mode, dropout off): the float32 model's
    gradient against the same step with the model cast to `dtype` (as fairseq's --fp16 / --bf16
    train) or under autocast to it. The model is float32 on `device` and is left as it was.
    Returns {"backward": relative error, "backward_cosine": cosine}."""
    import copy

    from fairseq import utils

    import inspect

    sample = dataset.collater([dataset[i] for i in indices])
    params = inspect.signature(model.forward).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):  # phrase fields only for models that read them
        sample["net_input"] = {k: v for k, v in sample["net_input"].items() if k in params}
    sample = utils.move_to_cuda(sample, device) if device.type == "cuda" else sample
    was_training = model.training
    model.train()
    no_dropout(model)
    try:
        ref = step_gradients(model, criterion, sample)
        if autocast:
            got = step_gradients(model, criterion, sample, dtype, autocast=True)
        else:
            got = step_gradients(copy.deepcopy(model).to(dtype), criterion, sample)
    finally:
        model.train(was_training)
    rel, cos = compare_gradients(got, ref)
    return {"backward": rel, "backward_cosine": cos}


def check(train_args, data, user_dir, device, dtype, sentences=4, steps=8, seed=1):
    """{"padding": difference, "incremental": difference, "backward": difference, "backward_cosine": ...,
    "tolerance": ..., "pass": bool}."""
    # built in float32 for the backward's reference, then cast: the same weights build() gives in dtype
    task, model, criterion = build(train_args, data, user_dir, device, torch.float32, seed, with_criterion=True)
    dataset = task.dataset("valid")
    indices = pick_sentences(dataset, sentences)
    tgt_dict = task.target_dictionary
    result = gradient_difference(model, criterion, dataset, indices, device, dtype)
    model = model.to(dtype).eval()
    result.update({"padding": padding_difference(model, dataset, tgt_dict, indices, device),
                   "incremental": incremental_difference(model, dataset, tgt_dict, indices, device, steps=steps,
                                                         seed=seed),
                   "tolerance": TOLERANCE[dtype], "backward_tolerance": GRADIENT_TOLERANCE[dtype],
                   "sentences": len(indices), "steps": steps})
    result["pass"] = (all(result[k] <= TOLERANCE[dtype] for k in ("padding", "incremental"))
                      and result["backward"] <= GRADIENT_TOLERANCE[dtype] and result["backward_cosine"] >= MIN_COSINE)
    del model
    return result
