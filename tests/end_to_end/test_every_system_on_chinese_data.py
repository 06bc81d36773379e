"""Issue 44: every registered system trains and decodes on a Chinese-English data directory as a
user makes one (tests/fairseq_runs.py's make_chinese_data_bin: raw Chinese without spaces ->
mgsa-segment-zh -> separate BPE codes and dictionaries -> mgsa-preprocess with Chinese trees), each
with its own task, embeddings not shared between the languages; --share-all-embeddings on such
a directory stops before training with one line naming the two dictionaries.

The machinery (in-process fairseq-train and fairseq-generate, TINY dimensions, 2 updates) is
test_every_system_on_phrase_data's."""

import pytest
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from fairseq_mgsa import systems as registry
from fairseq_mgsa.errors import MGSAError
from fairseq_mgsa.fairseq_patches import excepthook, shared_embeddings

from mgsa_preprocess.synthetic import read_tree
from tests.end_to_end.test_every_system_on_phrase_data import generate, train
from tests.fairseq_runs import TINY, USER_DIR, make_chinese_data_bin
from tests.preprocess.conftest import read_phrase_file, reference_levels, subword_spans

# in the default suite, one system of each model family (fairseq's Transformer, syntactic MG-SA with
# the tag loss over Chinese labels, HySAN, PBA); the others, the same models with other options
# (test_every_system_on_phrase_data runs each), behind the slow mark: the suite's time budget
DEFAULT = ("transformer", "mgsa_syntactic", "hysan", "pba_interleaved_queryk")
SYSTEMS = [pytest.param(s, id=s.name, marks=() if s.name in DEFAULT else pytest.mark.slow)
           for s in registry.SYSTEMS.values()]
N_VALID = 16


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return make_chinese_data_bin(tmp_path_factory.mktemp("zh_corpus"), n_valid=N_VALID)


def test_the_data_directory_has_a_dictionary_per_language_and_chinese_phrase_tags(data_bin):
    zh = open(data_bin / "dict.zh.txt", encoding="utf-8").read().split("\n")
    en = open(data_bin / "dict.en.txt", encoding="utf-8").read().split("\n")
    # fairseq pads each dictionary to a multiple of 8 with madeupwordNNNN
    zh_words = {line.split(" ")[0] for line in zh if line and not line.startswith("madeupword")}
    en_words = {line.split(" ")[0] for line in en if line and not line.startswith("madeupword")}
    assert zh_words and en_words and not zh_words & en_words  # Chinese subwords and English ones, nothing shared
    assert any("\u4e00" <= c <= "\u9fff" for w in zh_words for c in w)
    tags = {line.split(" ")[0] for line in open(data_bin / "dict.zh.tags.txt", encoding="utf-8") if line.strip()}
    assert {"NP", "VP", "PP", "DNP", "NN", "VV", "PU"} <= tags and not tags & {"S", "VBD", "IN"}


def test_phrases_are_the_chinese_trees_levels_over_the_subwords(data_bin):
    """The phrase files hold, per level, the gold tree's phrases (tests/preprocess/conftest.py's
    reference partition) measured in the source's BPE pieces, with their Chinese labels."""
    from fairseq.data import Dictionary

    trees = [read_tree(line) for line in open(data_bin.parent / "seg" / "train.zh.tree", encoding="utf-8")]
    bpe = (data_bin / "bpe" / "train.zh").read_text(encoding="utf-8").splitlines()
    tag_dict = Dictionary.load(str(data_bin / "dict.zh.tags.txt"))
    pieces = []  # pieces per word: a piece ending in @@ continues into the next
    for tree, line in zip(trees, bpe):
        counts, n = [], 0
        for p in line.split():
            n += 1
            if not p.endswith("@@"):
                counts.append(n)
                n = 0
        assert line.replace("@@ ", "").split() == tree.leaves()
        pieces.append(counts)
    for k in (1, 2, 3):
        got = [(lens, [tag_dict[t] for t in tags])
               for lens, tags in read_phrase_file(str(data_bin / "train.zh-en.zh"), k)]
        want = [(subword_spans(lv, counts), [t for _, _, t in lv])
                for lv, counts in ((reference_levels(t, 3)[k - 1], c) for t, c in zip(trees, pieces))]
        assert got == want


@pytest.mark.parametrize("system", SYSTEMS)
def test_system_trains_and_decodes_on_chinese_data(data_bin, tmp_path, system):
    train(data_bin, tmp_path, system, system.task)
    out = generate(data_bin, tmp_path, system.task)
    ids = sorted(int(line.split("\t")[0][2:]) for line in out.splitlines() if line.startswith("H-"))
    assert ids == list(range(N_VALID)), out[-2000:]
    sources = [line.split("\t")[1] for line in out.splitlines() if line.startswith("S-")]
    assert all(any("\u4e00" <= c <= "\u9fff" for c in s) for s in sources)  # the Chinese source was read


def _setup(data_bin, system, *extra):
    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[
        str(data_bin), "--user-dir", USER_DIR, *system.train_args("base"), *TINY, *extra])
    cfg = convert_namespace_to_omegaconf(args)
    return tasks.setup_task(cfg.task), cfg


@pytest.mark.parametrize("name", ["mgsa_syntactic", "hysan", "transformer"])
def test_shared_embeddings_with_separate_dictionaries_stop_in_one_line(data_bin, name):
    """The plugin's models and its task check before the model is built; the message names both dictionaries."""
    task, cfg = _setup(data_bin, registry.get(name), "--share-all-embeddings", "--task", "mgsa_translation")
    with pytest.raises(MGSAError) as e:
        task.build_model(cfg.model)
    assert str(e.value).startswith(
        f"--share-all-embeddings needs one dictionary for both languages, but {data_bin}/dict.zh.txt (")
    assert "\n" not in str(e.value)


def test_fairseqs_own_refusal_is_printed_as_the_same_line(data_bin, capsys):
    """fairseq's Transformer under fairseq's translation task raises its own ValueError; the
    plugin's exception hook prints it as one line (what fairseq-train's user sees)."""
    task, cfg = _setup(data_bin, registry.get("transformer"), "--share-all-embeddings", "--task", "translation")
    with pytest.raises(ValueError) as e:
        task.build_model(cfg.model)
    assert str(e.value) == shared_embeddings.FAIRSEQ_MESSAGE  # fairseq still says this
    excepthook._excepthook(type(e.value), e.value, e.value.__traceback__)
    err = capsys.readouterr().err
    assert err == f"fairseq-mgsa error: {shared_embeddings.message()}\n"


def test_without_sharing_the_model_builds(data_bin):
    task, cfg = _setup(data_bin, registry.get("mgsa_syntactic"))
    model = task.build_model(cfg.model)
    assert model.encoder.embed_tokens.weight is not model.decoder.embed_tokens.weight
