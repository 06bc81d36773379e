"""Fuzzing the data path: random trees (function tags, empty elements, unlabeled or ROOT
outer brackets, a one-word sentence in every corpus) and random subword segmentations,
through mgsa-preprocess, the mgsa_translation task's dataset and a model forward pass.

Checked for every sentence against the partition computed plainly from the tree
(``conftest.reference_levels``, in subword units):
* the dataset's phrases and tags;
* --truncate-source: a cut sentence keeps the phrases that start before the cut, the
  last one shortened to end there, and the model runs on it;
* --skip-invalid-size-inputs-valid-test: the sentences that remain are batched with
  their own phrases, the ones that are too long are dropped;
* the model: finite output, and the same encoder output for every sentence whether the
  batch pads sources on the left or on the right.
"""

import os
import tempfile

import torch
from fairseq import options, tasks
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.paths import ROOT
from tests.preprocess.conftest import reference_levels
from mgsa_preprocess.cli import main as mgsa_preprocess
from mgsa_preprocess.synthetic import Node

USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
TINY = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
        "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
        "--encoder-attention-heads", "4", "--decoder-attention-heads", "4", "--dropout", "0"]
LEVELS = 2
PHRASES = ["S", "NP", "VP", "PP", "SBAR"]
POS = ["NN", "DT", "VBD", "IN", "JJ"]
FUNCTION_TAGS = ["", "", "-SBJ", "-TMP-1", "=2"]
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa"]


@st.composite
def subtrees(draw, depth=0):
    """(written bracket text, plain Node for the reference)."""
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        pos, word = draw(st.sampled_from(POS)), draw(st.sampled_from(WORDS))
        return f"({pos} {word})", Node(pos, word)
    label = draw(st.sampled_from(PHRASES))
    kids = draw(st.lists(subtrees(depth + 1), min_size=1, max_size=3))
    if draw(st.integers(0, 3)) == 0:  # an empty element somewhere among the children
        kids.insert(draw(st.integers(0, len(kids))), ("(-NONE- *T*-1)", Node("-NONE-", "*T*-1")))
    text = f"({label}{draw(st.sampled_from(FUNCTION_TAGS))} " + " ".join(t for t, _ in kids) + ")"
    return text, Node(label, [n for _, n in kids])


@st.composite
def sentences(draw):
    """(tree line, plain tree, segmented source line, pieces per word)."""
    text, tree = draw(subtrees())
    outer = draw(st.sampled_from(["(ROOT {})", "( {} )", "(TOP {})", "{}"]))
    words = words_of(tree)
    pieces = draw(st.lists(st.integers(1, 3), min_size=len(words), max_size=len(words)))
    segmented = []
    for w, p in zip(words, pieces):
        cuts = [len(w) * i // p for i in range(p + 1)]
        segmented.append(" ".join(w[a:b] + ("@@" if b < len(w) else "") for a, b in zip(cuts, cuts[1:])))
    return outer.format(text), tree, " ".join(segmented), pieces


def words_of(tree):
    if tree.is_preterminal:
        return [] if tree.label == "-NONE-" else [tree.children]
    return [w for c in tree.children for w in words_of(c)]


def reference(tree, pieces, level):
    """[(subword length, tag)] of the tree's phrases at `level` (1-based)."""
    return [(sum(pieces[s:e]), tag) for s, e, tag in reference_levels(tree, LEVELS)[level - 1]]


def clipped(phrases, cut):
    out, start = [], 0
    for length, tag in phrases:
        if start >= cut:
            break
        out.append((min(length, cut - start), tag))
        start += length
    return out


def setup(data_bin, *extra, left_pad_source=True):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data_bin), "--user-dir", USER_DIR, "--task", "mgsa_translation", "--arch", "mgsa_transformer_syntactic",
        *TINY, "--mgsa-granularities", "word,syn1,syn2,ngram2", "--cpu", *extra])
    args.left_pad_source = left_pad_source  # a bool option the command line can only switch on
    return tasks.setup_task(args), args


def phrases_of_batch(batch, b, level, tag_dict):
    lengths = batch["net_input"]["src_phrase_lengths"][level - 1, b]
    n = int(batch["net_input"]["src_phrase_counts"][level - 1, b])
    tags = batch["phrase_tags"][level - 1, b]
    return [(int(lengths[j]), tag_dict[int(tags[j])]) for j in range(n)]


# Few examples (each runs mgsa-preprocess and builds a model); no shrinking, which takes minutes here.
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(st.lists(sentences(), min_size=2, max_size=5), st.data())
def test_random_trees_and_segmentations_through_the_data_path(corpus, data):
    one_word = ("(ROOT (NN omega))", Node("NN", "omega"), "om@@ e@@ ga", [3])
    corpus.insert(data.draw(st.integers(0, len(corpus))), one_word)
    cut = data.draw(st.integers(2, 7), label="--max-source-positions")  # sources cut at cut - 1 tokens + EOS
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("train", "valid"):
            with open(f"{tmp}/{split}.src", "w") as f:
                f.writelines(s + "\n" for _, _, s, _ in corpus)
            with open(f"{tmp}/{split}.tgt", "w") as f:
                f.writelines(" ".join(reversed(words_of(t))) + "\n" for _, t, _, _ in corpus)
            with open(f"{tmp}/{split}.src.tree", "w") as f:
                f.writelines(text + "\n" for text, _, _, _ in corpus)
        data_bin = f"{tmp}/data-bin"
        mgsa_preprocess(["--source-lang", "src", "--target-lang", "tgt", "--trainpref", f"{tmp}/train",
                         "--validpref", f"{tmp}/valid", "--trees-suffix", "tree", "--levels", str(LEVELS),
                         "--destdir", data_bin, "--joined-dictionary", "--workers", "1", "--no-progress-bar"])

        expected = {i: [reference(tree, pieces, k) for k in range(1, LEVELS + 1)]
                    for i, (_, tree, _, pieces) in enumerate(corpus)}
        n_tokens = {i: sum(pieces) for i, (_, _, _, pieces) in enumerate(corpus)}

        # both paddings: the dataset's phrases, the model's output
        outputs = {}
        model = None
        for left in (True, False):
            task, args = setup(data_bin, left_pad_source=left)
            task.load_dataset("train")
            ds = task.dataset("train")
            tags = task.tag_dictionary
            for i in expected:
                assert [[(int(a), tags[int(t)]) for a, t in zip(*p)] for p in ds[i]["phrases"]] == expected[i]
            if model is None:
                torch.manual_seed(0)
                model = task.build_model(args)
                model.eval()
            batch = ds.collater([ds[i] for i in expected])
            with torch.no_grad():
                enc = model.encoder(batch["net_input"]["src_tokens"], batch["net_input"]["src_lengths"],
                                    src_phrase_lengths=batch["net_input"]["src_phrase_lengths"],
                                    src_phrase_counts=batch["net_input"]["src_phrase_counts"])
                out = model(**batch["net_input"])[0]
            assert torch.isfinite(out).all()
            tokens = batch["net_input"]["src_tokens"]
            for b, i in enumerate(batch["id"].tolist()):
                real = tokens[b].ne(task.source_dictionary.pad())
                assert int(real.sum()) == n_tokens[i] + 1
                outputs.setdefault(i, []).append(enc["encoder_out"][0][real, b])
        for i, (a, b) in outputs.items():
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)

        # --truncate-source: cut sentences keep the phrases before the cut
        task, args = setup(data_bin, "--truncate-source", "--max-source-positions", str(cut))
        task.load_dataset("train")
        ds = task.dataset("train")
        for i in expected:
            assert len(ds[i]["source"]) == min(n_tokens[i], cut - 1) + 1
            got = [[(int(a), task.tag_dictionary[int(t)]) for a, t in zip(*p)] for p in ds[i]["phrases"]]
            assert got == [clipped(p, cut - 1) for p in expected[i]]
        batch = ds.collater([ds[i] for i in expected])
        with torch.no_grad():
            assert torch.isfinite(model(**batch["net_input"])[0]).all()

        # --skip-invalid-size-inputs-valid-test: too long sentences dropped, the others keep their phrases
        task, args = setup(data_bin)
        task.load_dataset("valid")
        itr = task.get_batch_iterator(task.dataset("valid"), max_tokens=4000, max_positions=(cut, 1024),
                                      ignore_invalid_inputs=True, required_batch_size_multiple=1)
        seen = []
        for batch in itr.next_epoch_itr(shuffle=False):
            for b, i in enumerate(batch["id"].tolist()):
                seen.append(i)
                for k in range(1, LEVELS + 1):
                    assert phrases_of_batch(batch, b, k, task.tag_dictionary) == expected[i][k - 1]
        assert sorted(seen) == [i for i in expected if n_tokens[i] + 1 <= cut]
