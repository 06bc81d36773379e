"""fairseq's encoder options with MG-SA layers (issue 14): --encoder-layerdrop and
--checkpoint-activations, on a tiny syntactic model, against plain reference computations."""

import os

import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.tasks.translation import TranslationTask

import fairseq_mgsa
from fairseq_mgsa.criterions.label_smoothed_cross_entropy_with_phrase_tags import phrase_tag_loss

USER_DIR = os.path.dirname(os.path.abspath(fairseq_mgsa.__file__))
TINY = ["--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
        "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]
TAGS = ["NP", "VP", "PP", "DT", "NN", "VBD"]


def build(extra, seed=0):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        "unused-data", "--user-dir", USER_DIR, "--arch", "mgsa_transformer_syntactic", *TINY, *extra])
    d = Dictionary()
    for i in range(20):
        d.add_symbol(f"w{i}")
    task = TranslationTask(args, d, d)
    task.tag_dictionary = Dictionary()  # what mgsa_translation gives the model
    for t in TAGS:
        task.tag_dictionary.add_symbol(t)
    torch.manual_seed(seed)
    return task.build_model(args), d, task.tag_dictionary


def batch(d, tags):
    """Two right-padded sentences with three levels of nested phrases and their tags."""
    tokens = torch.tensor([[5, 6, 7, 8, 9, d.eos()], [10, 11, 12, d.eos(), d.pad(), d.pad()]])
    levels = [[[2, 3], [1, 2]], [[2, 2, 1], [1, 1, 1]], [[1, 1, 2, 1], [1, 1, 1]]]  # level x sentence
    lengths = torch.zeros(3, 2, 4, dtype=torch.long)
    counts = torch.zeros(3, 2, dtype=torch.long)
    phrase_tags = torch.full((3, 2, 4), tags.pad(), dtype=torch.long)
    for k, level in enumerate(levels):
        for b, lens in enumerate(level):
            lengths[k, b, :len(lens)] = torch.tensor(lens)
            counts[k, b] = len(lens)
            phrase_tags[k, b, :len(lens)] = torch.tensor([tags.index(TAGS[(k + b + j) % len(TAGS)])
                                                          for j in range(len(lens))])
    return tokens, lengths, counts, phrase_tags


def test_layerdrop_gives_the_partitions_to_the_mgsa_layer_whatever_it_keeps():
    """MG-SA in layer 2 of 3, LayerDrop 0.5, no dropout: for each draw of LayerDrop the
    encoder output is that of the kept layers run in order, the MG-SA layer with its
    partitions (it crashed when the layers before it were dropped)."""
    model, d, tags = build(["--encoder-layers", "3", "--mgsa-layers", "2", "--encoder-layerdrop", "0.5",
                            "--dropout", "0", "--attention-dropout", "0", "--activation-dropout", "0"])
    enc = model.encoder
    enc.train()
    tokens, lengths, counts, _ = batch(d, tags)
    padding_mask = tokens.eq(d.pad())
    seen = set()
    with torch.no_grad():
        for seed in range(12):
            torch.manual_seed(seed)
            kept = (torch.empty(3).uniform_() > 0.5).tolist()  # LayerDropModuleList's draw
            torch.manual_seed(seed)
            out = enc(tokens, None, src_phrase_lengths=lengths, src_phrase_counts=counts)

            partitions = enc.build_partitions(padding_mask, lengths, counts)
            x = enc.forward_embedding(tokens)[0].masked_fill(padding_mask.unsqueeze(-1), 0).transpose(0, 1)
            for i in range(3):  # indexing: iterating a LayerDropModuleList in training drops layers
                if not kept[i]:
                    continue
                layer = enc.layers[i]
                x = layer(x, padding_mask, partitions)[0] if i == 1 else layer(x, encoder_padding_mask=padding_mask)
            torch.testing.assert_close(out["encoder_out"][0], x)
            assert len(out["mgsa_composed"]) == int(kept[1])
            seen.add((kept[0], kept[1]))
    assert (False, True) in seen and (True, True) in seen and (True, False) in seen


def tag_loss_gradients(model, d, tags):
    tokens, lengths, counts, phrase_tags = batch(d, tags)
    model.train()
    model.zero_grad()
    torch.manual_seed(1)  # the same dropout masks in both models
    enc_out = model.encoder(tokens, None, src_phrase_lengths=lengths, src_phrase_counts=counts)
    loss, _, count = phrase_tag_loss(model.encoder.phrase_tag_logits(enc_out), phrase_tags, tags.pad(), tags.unk())
    assert count > 0
    loss.backward()
    return {n: p.grad for n, p in model.encoder.named_parameters() if "phrase_tag_classifier" not in n}


def test_checkpoint_activations_keep_the_tag_loss_gradient_to_the_encoder():
    """L_tag's gradients reach the encoder below the classifier (the MG-SA layer's phrase
    composition and the embeddings), equal with --checkpoint-activations to those without."""
    plain, d, tags = build(["--encoder-layers", "2"])
    checkpointed, _, _ = build(["--encoder-layers", "2", "--checkpoint-activations"])
    checkpointed.load_state_dict(plain.state_dict())
    reference = tag_loss_gradients(plain, d, tags)
    grads = tag_loss_gradients(checkpointed, d, tags)
    # G is composed from the MG-SA layer's input: the embeddings and the composition get gradients
    reached = {n for n, g in grads.items() if g is not None and g.abs().sum() > 0}
    assert "embed_tokens.weight" in reached
    assert any(n.startswith("layers.0.self_attn.") for n in reached)
    params = dict(plain.encoder.named_parameters())
    for name, g in reference.items():
        # a parameter off L_tag's path: no gradient, or (recomputed under checkpointing) a zero one
        zero = torch.zeros_like(params[name])
        torch.testing.assert_close(grads[name] if grads[name] is not None else zero,
                                   g if g is not None else zero, atol=1e-6, rtol=1e-5, msg=name)
