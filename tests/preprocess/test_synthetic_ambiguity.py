"""The grammar corpus's attachment-ambiguous sentences (preprocess/synthetic/, issue 29): a
source string is ambiguous where the grammar could attach one of its PPs to the noun phrase or
to the verb phrase, so that only the tree tells the two targets apart. Held against hand-written
trees, and against the generator itself (every gold tree is one of its string's readings)."""

import pytest

from mgsa_preprocess.synthetic import (ambiguous_lines, attachment_ambiguous, generate, read_tree, readings,
                                       translate, write_corpus)

DOG, SCOPE, HILL = "(NP (DT the) (NN dog))", "(NP (DT a) (NN telescope))", "(NP (DT the) (NN hill))"
WITH, NEAR = f"(PP (IN with) {SCOPE})", f"(PP (IN near) {HILL})"
ANNA = "(NP (NNP Anna))"


def s(*parts):
    return "(ROOT (S " + " ".join(parts) + " (. .)))"


# tree: ambiguous?
CASES = {
    # the textbook case, both ways: "saw the dog with a telescope"
    s(ANNA, f"(VP (VBD saw) {DOG} {WITH})"): True,
    s(ANNA, f"(VP (VBD saw) (NP {DOG} {WITH}))"): True,
    s(ANNA, f"(VP (VBZ sees) (NP {DOG} {WITH}))"): True,
    # no PP, or a PP the verb cannot take: in the subject, or fronted before the comma
    s(ANNA, f"(VP (VBD saw) {DOG})"): False,
    s(f"(NP {DOG} {WITH})", f"(VP (VBD saw) {ANNA})"): False,
    s(NEAR, "(, ,)", ANNA, f"(VP (VBD saw) {DOG})"): False,
    s("(ADVP (RB then))", ANNA, f"(VP (VBD met) (NP (DT a) (JJ red) (NN farmer)))"): False,
    # two PPs after the object: "with a telescope" on the dog and "near the hill" on the verb, or
    # "near the hill" on the telescope
    s(ANNA, f"(VP (VBD saw) (NP {DOG} {WITH}) {NEAR})"): True,
    # passive: the PP after the agent can attach to the agent or to the participle's VP
    s(ANNA, f"(VP (VBD was) (VP (VBN seen) (PP (IN by) {DOG}) {WITH}))"): True,
    s(ANNA, f"(VP (VBZ is) (VP (VBN seen) (PP (IN by) (NP {DOG} {WITH}))))"): True,
    # the grammar's depth limits decide: a PP on the agent's noun takes no PP of its own, nor does
    # the noun of the VP's second PP, so "near the hill" can only be the verb's
    s(ANNA, f"(VP (VBD was) (VP (VBN seen) (PP (IN by) (NP {DOG} {WITH})) {NEAR}))"): False,
    # nor does the noun of the object's PP: "near the hill" is the VP's
    s(ANNA, f"(VP (VBD saw) (NP {DOG} (PP (IN with) (NP {SCOPE} {NEAR}))))"): None,  # not generable
}


@pytest.mark.parametrize("tree", list(CASES))
def test_hand_written_trees(tree):
    if CASES[tree] is None:
        with pytest.raises(ValueError, match="not a tree of the grammar"):
            attachment_ambiguous(tree)
    else:
        assert attachment_ambiguous(tree) is CASES[tree]
        assert attachment_ambiguous(read_tree(tree)) is CASES[tree]


def test_the_readings_of_two_pps_after_the_object():
    got = {t.bracketed() for t in readings("Anna saw the dog with a telescope near the hill .")}
    assert got == {s(ANNA, f"(VP (VBD saw) (NP {DOG} {WITH}) {NEAR})"),
                   s(ANNA, f"(VP (VBD saw) {DOG} (PP (IN with) (NP {SCOPE} {NEAR})))")}
    # and the two targets differ: word order and the preposition's word
    targets = {" ".join(translate(t)) for t in readings("Anna saw the dog with a telescope near the hill .")}
    assert targets == {"Ana kunte en skopo da hundo apud da monto vidis .",
                       "Ana da hundo kun apude da monto en skopo vidis ."}


def test_a_line_of_several_sentences_is_ambiguous_when_one_of_them_is():
    plain, ambiguous = s(ANNA, f"(VP (VBD saw) {DOG})"), s(ANNA, f"(VP (VBD saw) {DOG} {WITH})")
    line = lambda *trees: "(ROOT (S " + " ".join(t[len("(ROOT "):-1] for t in trees) + "))"  # noqa: E731
    assert attachment_ambiguous(line(plain, plain)) is False
    assert attachment_ambiguous(line(plain, ambiguous)) is True


def test_strings_outside_the_grammar_have_no_reading():
    assert readings("Anna saw .") == [] and readings("the dog saw Anna") == []
    assert readings("Anna saw the dog with .") == []
    with pytest.raises(ValueError, match="unbalanced"):
        read_tree("(ROOT (S (NP (NNP Anna))")


def test_every_generated_tree_is_one_of_its_strings_readings():
    """The recognizer mirrors the generator: the gold tree is always among the readings, and the
    generator's own target among their translations; both kinds of sentence occur."""
    flags = []
    for src, tgt, tree in generate(1500, seed=11) + generate(100, seed=12, sentences_per_line=2):
        flags.append(attachment_ambiguous(tree))
        if " . " not in src:  # one sentence a line
            trees = readings(src)
            assert tree in {t.bracketed() for t in trees}
            assert tgt in {" ".join(translate(t)) for t in trees}
    assert 0.2 < sum(flags) / len(flags) < 0.8


def test_ambiguous_lines_of_a_tree_file(tmp_path):
    """1-based line numbers of the tree file."""
    write_corpus(str(tmp_path), (("test", 40),), seed=2)
    trees = (tmp_path / "test.src.tree").read_text().splitlines()
    lines = ambiguous_lines(str(tmp_path / "test.src.tree"))
    assert lines and len(lines) < 40
    assert lines == [i for i, t in enumerate(trees, 1) if attachment_ambiguous(t)]


def test_cyrillic_target_is_the_same_corpus_in_another_script(tmp_path):
    """--cyrillic (the English-Russian recipe's stand-in for Russian): every target word of the
    grammar gets its own Cyrillic form, a letter each, capitals kept, punctuation as it was; the
    corpus is otherwise the one written without it."""
    from mgsa_preprocess.synthetic import (ADJECTIVES, ADVERBS, AGENT, AUXILIARIES, CYRILLIC, DETERMINERS, NAMES,
                                           NOUNS, PARTICIPLE, PREPOSITIONS, PRESENT, VERBS, cyrillic, write_corpus)
    words = {*DETERMINERS.values(), *ADJECTIVES.values(), *NOUNS.values(), *NAMES.values(), *VERBS.values(),
             *(t for _, t in PRESENT.values()), *(t for _, t in PARTICIPLE.values()), *AUXILIARIES.values(),
             *ADVERBS.values(), AGENT[1], *(w for pair in PREPOSITIONS.values() for w in pair)}
    forms = {w: cyrillic(w) for w in words}
    assert len(set(forms.values())) == len(words)  # a translation still: no two words merge
    for w, c in forms.items():
        assert all("\u0400" <= ch <= "\u04ff" for ch in c), (w, c)
        expected = "".join(CYRILLIC[ch.lower()].upper() if ch.isupper() else CYRILLIC[ch] for ch in w)
        assert c == expected
    assert cyrillic("Ana ,.") == "Ана ,."
    write_corpus(str(tmp_path / "latin"), (("train", 30),), seed=2, src="en", tgt="ru")
    write_corpus(str(tmp_path / "cyr"), (("train", 30),), seed=2, src="en", tgt="ru", cyrillic_target=True)
    for name in ("train.en", "train.en.tree"):
        assert (tmp_path / "cyr" / name).read_bytes() == (tmp_path / "latin" / name).read_bytes()
    latin = (tmp_path / "latin" / "train.ru").read_text(encoding="utf-8").splitlines()
    assert (tmp_path / "cyr" / "train.ru").read_text(encoding="utf-8").splitlines() == [cyrillic(t) for t in latin]
