"""Input lines at decoding time (fairseq-interactive, the hub interface) on Moses-style
training text (issue 14): tree leaves become the training text's words (`&amp;`,
`&apos;s`, `@-@`), the BPE's own separator marks the words, and phrases that do not
cover a line's tokens are a one-line error naming the line."""

import os
import random
import subprocess
import sys
from argparse import Namespace

import pytest
from fairseq.data import Dictionary, data_utils
from fairseq.data.encoders.subword_nmt_bpe import SubwordNMTBPE
from subword_nmt.learn_bpe import learn_bpe

from fairseq_mgsa.data.inference_phrases import PhraseAnnotator
from fairseq_mgsa.errors import MGSAError
from mgsa_preprocess.synthetic import NAMES, NOUNS

from tests.paths import ROOT


def example(rng):
    """(Moses-tokenized line, tree as a parser writes it: plain leaves) with the escapes
    of WMT English: an apostrophe, a hyphen inside a word, an ampersand."""
    name, noun, other = rng.choice(sorted(NAMES)), rng.choice(sorted(NOUNS)), rng.choice(sorted(NOUNS))
    kind = rng.randrange(3)
    if kind == 0:
        return (f"{name} &apos;s {noun} liked the well @-@ known {other} .",
                f"(ROOT (S (NP (NP (NNP {name}) (POS 's)) (NN {noun})) (VP (VBD liked) (NP (DT the) "
                f"(ADJP (RB well) (HYPH -) (VBN known)) (NN {other}))) (. .)))")
    if kind == 1:
        return (f"AT&amp;T found a {noun} near the {other} .",
                f"(ROOT (S (NP (NNP AT&T)) (VP (VBD found) (NP (NP (DT a) (NN {noun})) (PP (IN near) "
                f"(NP (DT the) (NN {other}))))) (. .)))")
    return (f"the {noun} &apos;s {other} met {name} &amp; AT&amp;T .",
            f"(ROOT (S (NP (NP (DT the) (NN {noun}) (POS 's)) (NN {other})) (VP (VBD met) (NP (NNP {name}) "
            f"(CC &) (NNP AT&T))) (. .)))")


def binarize(tmp, destdir, separator):
    proc = subprocess.run([sys.executable, "-m", "mgsa_preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
                           "--trainpref", tmp / "train", "--testpref", tmp / "test", "--trees-suffix", "tree",
                           "--levels", "3", "--bpe-codes", tmp / "codes", "--bpe-separator", separator,
                           "--destdir", destdir, "--joined-dictionary", "--workers", "1"], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    src_dict = Dictionary.load(str(destdir / "dict.src.txt"))
    tag_dict = Dictionary.load(str(destdir / "dict.src.tags.txt"))
    tokens = data_utils.load_indexed_dataset(str(destdir / "test.src-tgt.src"), None)
    levels = [data_utils.load_indexed_dataset(str(destdir / f"test.src-tgt.src.syn{k}"), None) for k in (1, 2, 3)]
    return src_dict, tag_dict, tokens, levels


@pytest.fixture(scope="module")
def escaped_corpus(tmp_path_factory):
    """Moses-escaped text with plain-leaf trees (as stanza writes them), BPE codes."""
    tmp = tmp_path_factory.mktemp("escaped")
    rng = random.Random(4)
    for split, n in (("train", 120), ("test", 12)):
        lines, trees = zip(*(example(rng) for _ in range(n)))
        (tmp / f"{split}.src").write_text("".join(line + "\n" for line in lines))
        (tmp / f"{split}.src.tree").write_text("".join(t + "\n" for t in trees))
        (tmp / f"{split}.tgt").write_text("".join(" ".join(reversed(line.split())) + "\n" for line in lines))
    with open(tmp / "train.src") as f, open(tmp / "codes", "w") as out:
        learn_bpe(list(f), out, num_symbols=30)
    return tmp


@pytest.fixture(scope="module")
def escaped_data(escaped_corpus):
    """mgsa-preprocess's binaries and phrase files of it (subword-nmt's @@)."""
    src_dict, tag_dict, tokens, levels = binarize(escaped_corpus, escaped_corpus / "data-bin", "@@")
    # the training text's words are all known: a word in another form would be <unk>
    assert src_dict.unk() not in src_dict.encode_line((escaped_corpus / "data-bin" / "bpe" / "train.src")
                                                      .read_text().split("\n")[0])
    trees = (escaped_corpus / "test.src.tree").read_text().splitlines()
    return escaped_corpus, src_dict, tag_dict, tokens, levels, trees


def bpe(codes, separator="@@"):
    return SubwordNMTBPE(Namespace(bpe_codes=str(codes), bpe_separator=separator))


def test_tree_leaves_become_the_training_texts_words(escaped_data):
    """Trees with plain leaves (`AT&T`, `'s`, `-`) give the tokens and phrase files
    mgsa-preprocess made from the escaped training text: no <unk>."""
    tmp, src_dict, tag_dict, ref_tokens, ref_levels, trees = escaped_data
    annotator = PhraseAnnotator(src_dict, tag_dict, 3, "trees", bpe=bpe(tmp / "codes"))
    tokens, phrases = annotator(trees)
    for i, t in enumerate(tokens):
        assert src_dict.unk() not in t.tolist(), src_dict.string(t)
        assert t.tolist() == ref_tokens[i].tolist()
        for k, (lengths, tags) in enumerate(phrases[i]):
            assert lengths.tolist() + tags.tolist() == ref_levels[k][i].tolist()
    # leaves already written as the training text writes them are kept
    escaped = trees[0].replace("(POS 's)", "(POS &apos;s)").replace("(HYPH -)", "(HYPH @-@)")
    assert annotator([escaped])[0][0].tolist() == tokens[0].tolist()


def test_bpe_separator_marks_the_words(escaped_corpus):
    """--bpe-separator ++ (training data made with mgsa-preprocess --bpe-separator ++):
    the tokens and phrases of mgsa-preprocess."""
    src_dict, tag_dict, ref_tokens, ref_levels = binarize(escaped_corpus, escaped_corpus / "data-bin-pp", "++")
    trees = (escaped_corpus / "test.src.tree").read_text().splitlines()
    annotator = PhraseAnnotator(src_dict, tag_dict, 3, "trees", bpe=bpe(escaped_corpus / "codes", "++"))
    tokens, phrases = annotator(trees)
    assert any("++" in src_dict[t] for t in tokens[0].tolist())  # words are split
    for i, sentence in enumerate(phrases):
        assert tokens[i].tolist() == ref_tokens[i].tolist()
        for k, (lengths, tags) in enumerate(sentence):
            assert lengths.tolist() + tags.tolist() == ref_levels[k][i].tolist()


def test_phrases_that_miss_the_tokens_are_a_one_line_error_naming_the_line(escaped_data):
    """A BPE that does not mark word boundaries the way the annotator reads them (here:
    long words cut into letters, unmarked) cannot be aligned: the error names the input
    line (counted over the whole input, as fairseq-interactive reads it in buffers)."""
    _, src_dict, tag_dict, _, _, trees = escaped_data

    class UnmarkedBPE:
        def encode(self, text):
            return " ".join(" ".join(w) if len(w) > 5 else w for w in text.split())

    short = "(ROOT (S (NP (NNP Anna)) (VP (VBD met) (NP (DT the) (NN dog))) (. .)))"
    annotator = PhraseAnnotator(src_dict, tag_dict, 3, "trees", bpe=UnmarkedBPE())
    annotator([short])  # no long word: nothing to misalign
    with pytest.raises(MGSAError, match=r"^input line 12: the phrases of tree level 1 cover \d+ tokens, but the "
                                        r"line has \d+ after BPE") as e:
        annotator([short, trees[0]], first_line=11)
    assert "\n" not in str(e.value)


def test_a_chinese_source_is_neither_escaped_nor_unescaped():
    """A Chinese source (mgsa_preprocess.parse.undoes_escapes False) was never Moses-tokenized: tree
    leaves keep their characters (an English vocabulary without plain quotes would get &apos;), and
    the parser of text input gets the words as they are (` would become ')."""
    src_dict = Dictionary()
    for w in ("他", "说", "好", "吗", "`", "“", "-", "@-@", "北京"):
        src_dict.add_symbol(w)
    tag_dict = Dictionary()
    tag_dict.add_symbol("NN")
    tag_dict.add_symbol("IP")
    leaves = ["他", "'", "好", "&", "北京", "-", "北京"]
    english = PhraseAnnotator(src_dict, tag_dict, 1, "trees")
    assert english.training_form(leaves) == ["他", "&apos;", "好", "&amp;", "北京", "@-@", "北京"]  # Moses' forms
    chinese = PhraseAnnotator(src_dict, tag_dict, 1, "trees", unescape=False)
    assert chinese.training_form(leaves) == leaves

    class Recording:
        def __init__(self):
            self.given = []

        def parse(self, sentences):
            self.given += sentences
            return ["(ROOT (IP " + " ".join(f"(NN {w})" for w in ws) + "))" for ws in sentences]

    for unescape, expected in ((True, ["他", "说", "'", "好", "吗"]), (False, ["他", "说", "`", "好", "吗"])):
        parser = Recording()
        annotator = PhraseAnnotator(src_dict, tag_dict, 1, "text", parser_factory=lambda: parser, unescape=unescape)
        tokens, _ = annotator(["他 说 ` 好 吗"])
        assert parser.given == [expected] and src_dict.string(tokens[0]) == "他 说 ` 好 吗"
