"""--profile: where the time of one update goes, per system (encoder layer 1 and its parts)."""

import time

import torch

from .data import model_batches
from .env import sync
from .timing import amp, build


def time_fwd_bwd(fn, inputs, device, iters, backward=True):
    """Mean ms of fn(*inputs) forward + backward (sum of the outputs), after one warmup."""
    def once():
        out = fn(*inputs)
        out = out[0] if isinstance(out, tuple) else out
        if backward:
            out.float().sum().backward()
    once()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        once()
    sync(device)
    return (time.perf_counter() - t0) / iters * 1000


def replay(module, args_, kwargs_):
    """(fn, x): fn(x) calls module as recorded, with x (a copy of its first tensor argument
    that requires grad) in every place that argument held (query = key = value for attention)."""
    primary = args_[0] if args_ else next(v for v in kwargs_.values() if torch.is_tensor(v))
    x = primary.detach().clone().requires_grad_(primary.is_floating_point())

    def fn(x):
        r_args = [x if t is primary else t for t in args_]
        r_kwargs = {k: (x if v is primary else v) for k, v in kwargs_.items()}
        return module(*r_args, **r_kwargs)
    return fn, x


def profile_model(args, task, batches, a, device):
    """Where the time of one update goes, on the first timed batch (under --fp16's autocast).

    Encoder layer 1 and its parts, forward + backward: forward pre-hooks record the
    arguments each part receives in a real forward pass of the model; every part is then
    replayed on those arguments, with its input tensor requiring grad, so the figures follow
    whatever the modules' signatures are. Beside them: the partition construction (forward
    only, it has no parameters), the phrase-tag classifier + loss on the composed phrases
    (models with tag supervision), one criterion forward + backward of the whole model, and
    in such a pass the host synchronisations (.item(), int(t), bool(t) of a tensor:
    aten::_local_scalar_dense; a .cpu() copy syncs on GPU too but is free, so unseen, on CPU)
    and the leaf aten ops (ops that call no other: about the kernels launched on a GPU).
    """
    model, criterion = build(args, task, device)
    model.train()
    [sample], _ = model_batches(model, [batches[a.warmup] if len(batches) > a.warmup else batches[0]])
    net_input, encoder, iters = sample["net_input"], model.encoder, a.profile_iters
    layer = encoder.layers[0]
    parts = {"layer 1": layer, "self-attention": layer.self_attn}
    memory = getattr(layer.self_attn, "phrase_memory", None)  # every granularity at once
    if memory is not None:
        parts["phrase memory (composition + interaction)"] = memory
        parts["composition"] = memory.composition
        if memory.interaction is not None:
            parts["interaction"] = memory.interaction
    calls, hooks, encoder_out = {}, [], {}
    for label, module in parts.items():
        def record(mod, args_, kwargs_, label=label):
            calls.setdefault(label, (args_, kwargs_))
        hooks.append(module.register_forward_pre_hook(record, with_kwargs=True))
    hooks.append(encoder.register_forward_hook(lambda mod, inp, out: encoder_out.update(out)))
    autocast = amp(a, device)
    with torch.no_grad(), autocast():
        model(**net_input)
    for h in hooks:
        h.remove()

    def amp_fn(fn):  # forward under --fp16's autocast, backward outside it (as in training)
        def wrapped(*inputs):
            with autocast():
                return fn(*inputs)
        return wrapped

    rows = {"tokens (B x T)": "x".join(map(str, net_input["src_tokens"].shape))}
    def update():
        loss, sample_size, _ = criterion(model, sample)
        return loss / sample_size
    step = amp_fn(update)
    rows["model + criterion, forward + backward ms"] = time_fwd_bwd(step, [], device, iters)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step().backward()
    rows["host syncs in one forward + backward"] = sum(
        e.count for e in prof.key_averages() if e.key == "aten::_local_scalar_dense")
    rows["leaf aten ops in one forward + backward (~ GPU kernel launches)"] = sum(
        1 for e in prof.events() if e.name.startswith("aten::") and not e.cpu_children)
    for label, module in parts.items():
        if label not in calls:
            continue
        args_, kwargs_ = calls[label]
        if label.endswith("self-attention") and not hasattr(module, "phrase_memory"):
            kwargs_ = dict(kwargs_, need_weights=False)  # as fairseq's encoder layer calls it
        fn, x = replay(module, args_, kwargs_)
        rows[f"{label} ms"] = time_fwd_bwd(amp_fn(fn), [x], device, iters)
        if label.endswith("interaction"):
            rows[f"{label}: phrases P (the most of any granularity)"] = int(x.size(2))  # Gr x B x P x C
    if hasattr(encoder, "build_partitions"):
        mask = net_input["src_tokens"].eq(encoder.padding_idx)
        with torch.no_grad():
            rows["partitions (forward) ms"] = time_fwd_bwd(
                encoder.build_partitions, [mask, net_input.get("src_phrase_lengths"),
                                           net_input.get("src_phrase_counts")], device, iters, backward=False)
    if getattr(encoder, "phrase_tag_classifier", None) is not None and "phrase_tags" in sample:
        from fairseq_mgsa.criterions.label_smoothed_cross_entropy_with_phrase_tags import phrase_tag_loss
        composed = [{g: (c.detach().requires_grad_(), p) for g, (c, p) in layer_composed.items()}
                    for layer_composed in encoder_out["mgsa_composed"]]
        leaves = [c for layer_composed in composed for c, _ in layer_composed.values()]

        def tag_loss(*_):
            logits = encoder.phrase_tag_logits({"mgsa_composed": composed})
            return phrase_tag_loss(logits, sample["phrase_tags"], criterion.tag_pad, criterion.tag_unk)[0]
        rows["phrase-tag classifier + L_tag ms"] = time_fwd_bwd(amp_fn(tag_loss), leaves, device, iters)
    if a.profile_ops:
        acts = [torch.profiler.ProfilerActivity.CPU] + (
            [torch.profiler.ProfilerActivity.CUDA] if device.type == "cuda" else [])
        fn, x = replay(layer, *calls["layer 1"])
        fn = amp_fn(fn)
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(iters):
                out = fn(x)
                (out[0] if isinstance(out, tuple) else out).float().sum().backward()
            sync(device)
        sort = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
        rows["top ops"] = prof.key_averages().table(sort_by=sort, row_limit=a.profile_ops)
    del model, criterion
    return rows
