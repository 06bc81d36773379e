"""mgsa-attention: the weights each system kind returns equal a plain computation written here
from the module's own parameters, rows sum to 1, outputs are unchanged by asking for weights;
the command end to end on tiny trained checkpoints; bad input is a one-line error."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention

from fairseq_mgsa.analysis.attention_maps import AttentionRecorder
from fairseq_mgsa.modules.hybrid_attention import HybridMultiheadAttention, parse_branches
from fairseq_mgsa.modules.multi_granularity_attention import MultiGranularitySelfAttention
from fairseq_mgsa.modules.partition import ngram_partition, spans_to_partition
from fairseq_mgsa.modules.phrase_based_attention import PhraseBasedAttention

C, H = 16, 4
d = C // H


def inputs(lengths=(7, 5), left_pad=True, seed=0):
    """x: T x B x C and the padding mask B x T (True at padding)."""
    torch.manual_seed(seed)
    T = max(lengths)
    mask = torch.zeros(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths):
        if left_pad:
            mask[b, :T - n] = True
        else:
            mask[b, n:] = True
    return torch.randn(T, len(lengths), C), mask


def head(linear, x, h):
    """Head h's rows of a projection: B x T x d."""
    return F.linear(x, linear.weight[h * d:(h + 1) * d], linear.bias[h * d:(h + 1) * d])


def softmax_rows(scores, allowed):
    """A plain softmax over the allowed keys of each row (python reference)."""
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.exp(scores - scores.max(-1, keepdim=True).values).div(
        torch.exp(scores - scores.max(-1, keepdim=True).values).sum(-1, keepdim=True))


def check_rows(weights, allowed_rows):
    """Every row a query attends with sums to 1."""
    sums = weights.sum(-1)
    assert torch.allclose(sums[allowed_rows.expand_as(sums)], torch.ones(()), atol=1e-5)


def test_transformer_self_attention_weights():
    """fairseq's MultiheadAttention, called as its encoder layer calls it (need_weights=False):
    the recorder gets per-head weights (not the fast path's head average) = softmax(QK^T/sqrt d)."""
    x, mask = inputs()
    attn = MultiheadAttention(C, H, self_attention=True).eval()
    plain, _ = attn(x, x, x, key_padding_mask=mask, need_weights=False)
    with AttentionRecorder({"enc1": attn}) as rec:
        out, _ = attn(query=x, key=x, value=x, key_padding_mask=mask, need_weights=False)
    assert attn.skip_embed_dim_check is False  # restored
    w = rec.weights["enc1"]  # H x B x T x T
    xb = x.transpose(0, 1)
    for h in range(H):
        ref = softmax_rows(head(attn.q_proj, xb, h) @ head(attn.k_proj, xb, h).transpose(1, 2) / d ** 0.5,
                           ~mask[:, None, :])
        assert torch.allclose(w[h], ref, atol=1e-5)
    check_rows(w, torch.ones(1, dtype=torch.bool))
    assert torch.allclose(out, plain, atol=1e-5)


def phrase_heads_reference(attn, x, mask, partitions):
    """Per head: the weights over its memory (tokens or phrase slots, padded to T) and the
    layer output, computed head by head from the module's parameters."""
    xb = x.transpose(0, 1)  # B x T x C
    B, T, _ = xb.shape
    grans = attn.phrase_granularities
    h_g, _ = attn.phrase_memory(xb, [partitions[g] for g in grans])  # Gr x B x P x C
    hpg = attn.heads_per_granularity
    weights, outs = torch.zeros(H, B, T, T), []
    for h in range(H):
        g = attn.granularities[h // hpg]
        if g == "word":
            memory, allowed = xb, ~mask[:, None, :]
        else:
            memory = h_g[grans.index(g)]
            P = memory.size(1)
            allowed = (torch.arange(P)[None, :] < partitions[g].num_phrases[:, None])[:, None, :]
        p = softmax_rows(head(attn.q_proj, xb, h) @ head(attn.k_proj, memory, h).transpose(1, 2) / d ** 0.5, allowed)
        weights[h, :, :, :p.size(-1)] = p
        outs.append(p @ head(attn.v_proj, memory, h))
    out = attn.out_proj(torch.cat(outs, dim=-1)).transpose(0, 1)  # T x B x C
    return weights, out


@pytest.mark.parametrize("kind", ["ngram", "syntactic"])
def test_mgsa_weights(kind):
    """MG-SA: word heads over tokens, phrase heads over their phrases: equal to the plain
    computation, rows sum to 1, the output equals the default (no weights) path's."""
    x, mask = inputs(left_pad=True)
    if kind == "ngram":
        grans = ["word", "ngram2", "ngram3", "ngram4"]
        partitions = {g: ngram_partition(mask, int(g[5:])) for g in grans[1:]}
    else:
        grans = ["word", "syn1", "syn2", "word"]  # out of order on purpose (group reordering)
        lengths = torch.tensor([[2, 4, 0], [1, 2, 1]])  # words only; EOS is a phrase of its own
        partitions = {"syn1": spans_to_partition(lengths, torch.tensor([2, 3]), mask),
                      "syn2": spans_to_partition(torch.tensor([[1, 1, 4], [1, 1, 2]]), torch.tensor([3, 3]), mask)}
    attn = MultiGranularitySelfAttention(C, H, grans, composition="san", interaction="onlstm").eval()
    with torch.no_grad():
        plain, _ = attn(x, mask, partitions)
        with AttentionRecorder({"enc1": attn}) as rec:
            out, _ = attn(x, key_padding_mask=mask, partitions=partitions)
        ref_w, ref_out = phrase_heads_reference(attn, x, mask, partitions)
    w = rec.weights["enc1"]  # H x B x T x slots
    assert torch.allclose(w, ref_w, atol=1e-5)
    check_rows(w, torch.ones(1, dtype=torch.bool))
    assert torch.allclose(out, plain, atol=1e-5) and torch.allclose(out, ref_out, atol=1e-5)
    # need_weights alone: token level, averaged over heads, each phrase's probability shared
    # evenly by its tokens
    with torch.no_grad():
        _, _, tok = attn(x, mask, partitions, need_weights=True)  # B x T x T
    expected = torch.zeros_like(tok)
    for h in range(H):
        g = attn.granularities[h // attn.heads_per_granularity]
        if g == "word":
            expected += ref_w[h] / H
            continue
        index = partitions[g].phrase_index  # B x T
        for b in range(index.size(0)):
            for s_ in range(index.size(1)):
                if index[b, s_] >= 0:
                    size = (index[b] == index[b, s_]).sum()
                    expected[b, :, s_] += ref_w[h, b, :, index[b, s_]] / size / H
    assert torch.allclose(tok, expected, atol=1e-5)
    assert torch.allclose(tok.sum(-1), torch.ones(()), atol=1e-5)


def ngram_keys(conv, x):
    """Conv_n ending at each token (zeros before the start): sum_j W_j x_{t-n+1+j} + b, B x T x out."""
    n = conv.weight.size(-1)
    xp = F.pad(x, (0, 0, n - 1, 0))
    return sum(xp[:, j:j + x.size(1)] @ conv.weight[:, :, j].T for j in range(n)) + conv.bias


def test_pba_homogeneous_convkv_weights():
    """PBA, homogeneous CONVKV 1,2: unigram heads over tokens, bigram heads over the bigrams
    (keys by the n-gram convolution); the token-level view shares a bigram's weight by its tokens."""
    x, _ = inputs(lengths=(6, 6))
    attn = PhraseBasedAttention(C, H, attention="convkv", mode="homogeneous", ngrams=(1, 2)).eval()
    with torch.no_grad(), AttentionRecorder({"enc1": attn}) as rec:
        attn(x, x, x, need_weights=False)
    xb = x.transpose(0, 1)
    q = attn.q_proj(xb)
    k = {1: attn.k_proj(xb), 2: ngram_keys(attn.k_ngram["2"], xb)}
    tokens = rec.weights["enc1"]  # H x B x T x T
    for group, (n, p) in enumerate(zip((1, 2), rec.extra["enc1"])):  # p: B x 2 x T x T
        for i in range(2):
            h = group * 2 + i
            qh = q[..., h * d:(h + 1) * d]
            kh = k[n][..., i * d:(i + 1) * d]
            ref = torch.softmax(qh @ kh.transpose(1, 2) / d ** 0.5, dim=-1)
            assert torch.allclose(p[:, i], ref, atol=1e-5)
            if n == 1:
                assert torch.allclose(tokens[h], ref, atol=1e-5)
            else:  # bigram ending at s covers s-1, s (one real token at s = 0)
                count = torch.tensor([1.0] + [2.0] * (ref.size(-1) - 1))
                share = ref / count
                spread = share + F.pad(share[..., 1:], (0, 1))
                assert torch.allclose(tokens[h], spread, atol=1e-5)
    check_rows(tokens, torch.ones(1, dtype=torch.bool))
    assert not hasattr(attn, "ngram_weights") and not attn.keep_ngram_weights


def test_hysan_branch_weights():
    """HySAN: one score matrix, each branch its own mask: every branch's probabilities."""
    x, mask = inputs(left_pad=False)
    branches = parse_branches("global,forward,backward,local1", decoder=False, option="test")
    attn = HybridMultiheadAttention(C, H, branches).eval()
    with torch.no_grad(), AttentionRecorder({"enc1": attn}) as rec:
        attn(x, x, x, key_padding_mask=mask, need_weights=False)
    xb = x.transpose(0, 1)
    T = xb.size(1)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    allowed = {"global": torch.ones(T, T, dtype=torch.bool), "forward": j <= i, "backward": j >= i,
               "local1": (i - j).abs() <= 1}
    for branch, p in zip(branches, rec.extra["enc1"]):  # B x H x T x T
        for h in range(H):
            scores = head(attn.q_proj, xb, h) @ head(attn.k_proj, xb, h).transpose(1, 2) / d ** 0.5
            blocked = scores.masked_fill(~allowed[branch.name], -1e8)  # the module's finite block
            ref = softmax_rows(blocked, ~mask[:, None, :])
            assert torch.allclose(p[:, h], ref, atol=1e-5), branch.name
            if branch.name == "global":
                assert torch.allclose(rec.weights["enc1"][h], ref, atol=1e-5)
        check_rows(p, torch.ones(1, dtype=torch.bool))


# ---- the command on tiny trained checkpoints ---------------------------------------------

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Baseline and syntactic MG-SA, one update each on the tiny syntactic corpus."""
    from fairseq_runs import SYSTEMS, make_data_bin, run, train_command

    tmp = tmp_path_factory.mktemp("attention")
    data = make_data_bin(tmp, n_train=64)
    paths = {}
    for name in ("transformer", "mgsa_syntactic"):
        system = next(s for s in SYSTEMS if s[0] == name)
        run(train_command(data, tmp / name, system, 1, ["--no-epoch-checkpoints", "--disable-validation"]),
            cwd=str(tmp))
        paths[name] = str(tmp / name / "checkpoint_last.pt")
    return tmp, data, paths


def attention(*argv):
    from fairseq_mgsa.analysis.attention_maps import parse_args, run

    return run(parse_args([str(a) for a in argv]))


def error_of(*argv):
    """The one-line message mgsa-attention exits with."""
    from fairseq_mgsa.analysis.attention_maps import main

    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    message = str(e.value.code)
    assert message.startswith("mgsa-attention: error: ") and "\n" not in message
    return message


def test_command_side_by_side(trained):
    """Two checkpoints, two sentences: PNGs, npz matrices whose shapes and labels are the
    sentences' (tokens read back give the raw text), rows summing to 1."""
    import matplotlib.image

    tmp, data, paths = trained
    out = tmp / "maps"
    manifest = attention(data, "--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--out", out,
                         "--test-ids", "0,2", "--gen-subset", "valid", "--cross-attention")
    assert manifest["layer"] == 2  # right after the MG-SA layer (layer 1)
    from mgsa_preprocess.partition import partition
    from mgsa_preprocess.trees import parse_tree

    raw = (tmp / "raw" / "valid.src").read_text().splitlines()
    trees = (tmp / "raw" / "valid.src.tree").read_text().splitlines()
    for i in (0, 2):
        arrays = np.load(out / f"test{i}.npz")
        tokens = list(arrays["m0_tokens"])
        assert list(arrays["m1_tokens"]) == tokens and tokens[-1] == "</s>"
        assert " ".join(tokens[:-1]).replace("@@ ", "") == raw[i]
        n = len(tokens)
        for k in (0, 1):
            for layer in (1, 2):
                w = arrays[f"m{k}_enc{layer}"]
                assert w.shape == (4, n, n) and np.allclose(w.sum(-1), 1, atol=1e-5)
            cross = arrays[f"m{k}_cross1"]
            assert cross.shape == (4, len(arrays[f"m{k}_target_tokens"]), n)
            assert np.allclose(cross.sum(-1), 1, atol=1e-5)
        assert arrays["m1_mgsa1_word"].shape == (1, n, n)
        for level in (1, 2, 3):
            spans, tags = arrays[f"m1_mgsa1_syn{level}_spans"], arrays[f"m1_mgsa1_syn{level}_tags"]
            assert spans[0, 0] == 0 and spans[-1, 1] == n and (spans[1:, 0] == spans[:-1, 1]).all()
            assert spans[-1, 0] == n - 1 and tags[-1] == "</s>"  # EOS: a phrase of its own
            assert arrays[f"m1_mgsa1_syn{level}"].shape == (1, n, len(spans))
            assert np.allclose(arrays[f"m1_mgsa1_syn{level}"].sum(-1), 1, atol=1e-5)
        # the level-1 phrases are the gold tree's, tags included (read as mgsa-preprocess reads it)
        top, _ = parse_tree(trees[i], "valid.src.tree", i + 1)
        assert list(arrays["m1_mgsa1_syn1_tags"][:-1]) == [node[0] for node in partition(top, 1)[0]]
        for png in (f"test{i}_self_layer2.png", f"test{i}_m1_mgsa_layer1.png", f"test{i}_cross.png"):
            assert matplotlib.image.imread(str(out / png)).ndim == 3
        assert set(manifest["sentences"][f"test{i}"]["figures_seconds"]) == {
            f"test{i}_self_layer2.png", f"test{i}_m1_mgsa_layer1.png", f"test{i}_cross.png"}


def test_trees_input_equals_test_split(trained):
    """The same sentence as a bracketed tree (--input, fairseq-interactive's path) and from
    the binarized split (--test-ids): same tokens, same phrases, same weights."""
    tmp, data, paths = trained
    trees = (tmp / "raw" / "valid.src.tree").read_text().splitlines()
    (tmp / "trees.txt").write_text(trees[1] + "\n" + trees[0] + "\n")
    common = [data, "--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--gen-subset", "valid"]
    attention(*common, "--out", tmp / "from-trees", "--input", tmp / "trees.txt", "--source-input", "trees",
              "--bpe-codes", tmp / "codes", "--layer", "1")
    attention(*common, "--out", tmp / "from-ids", "--test-ids", "1", "--layer", "1")
    a, b = np.load(tmp / "from-trees" / "line1.npz"), np.load(tmp / "from-ids" / "test1.npz")
    assert sorted(a.files) == sorted(b.files)
    for key in a.files:
        if a[key].dtype.kind in "fi":
            assert np.allclose(a[key], b[key], atol=1e-5), key
        else:
            assert (a[key] == b[key]).all(), key
    assert os.path.exists(tmp / "from-trees" / "line1_self_layer1.png")


def test_batched_equals_one_by_one(trained):
    """Sentences of different lengths in one padded batch give the weights each gives alone."""
    tmp, data, paths = trained
    common = [data, "--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--test-ids", "3,0,5",
              "--gen-subset", "valid"]
    attention(*common, "--out", tmp / "batched")
    attention(*common, "--out", tmp / "alone", "--batch-size", "1")
    for i in (3, 0, 5):
        a, b = np.load(tmp / "batched" / f"test{i}.npz"), np.load(tmp / "alone" / f"test{i}.npz")
        assert a.files == b.files
        for key in a.files:
            assert (a[key] == b[key]).all() if a[key].dtype.kind not in "f" else np.allclose(a[key], b[key], atol=1e-5)


def test_bad_input(trained):
    tmp, data, paths = trained
    both = ["--path", paths["transformer"], "--path", paths["mgsa_syntactic"], "--out", tmp / "bad"]
    # a tree broken over two lines: the line count is not the sentence count
    trees = (tmp / "raw" / "valid.src.tree").read_text().splitlines()
    broken = tmp / "broken.txt"
    broken.write_text(trees[0] + "\n" + trees[1].replace(" (VP", "\n(VP") + "\n")
    message = error_of(data, *both, "--input", broken, "--source-input", "trees", "--bpe-codes", tmp / "codes")
    assert f"{broken}:2: unbalanced bracket" in message and "one bracketed tree per line" in message
    message = error_of(data, *both, "--test-ids", "0,99", "--gen-subset", "valid")
    assert "--test-ids 99" in message and str(data / "valid.src-tgt.src") in message and "16 sentences" in message
    message = error_of(data, *both, "--test-ids", "0", "--gen-subset", "valid", "--layer", "5")
    assert "--layer 5" in message and "1-2" in message


def test_missing_checkpoint_is_one_line(tmp_path):
    """From the console script: one line on stderr naming the file, no traceback."""
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "mgsa-attention"), str(tmp_path),
                           "--path", str(tmp_path / "nope.pt"), "--out", str(tmp_path / "out"), "--test-ids", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode != 0
    lines = [l for l in proc.stderr.splitlines() if l.strip() and "tensorboardX" not in l]
    assert lines == [f"mgsa-attention: error: checkpoint {tmp_path / 'nope.pt'} not found (--path)"]
