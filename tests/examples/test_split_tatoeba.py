"""examples/tatoeba_zh_en/split_tatoeba.py on a generated cmn.txt: no Chinese sentence in two splits
(Traditional and Simplified spellings, full-width forms and spaces counted as one with --t2s), every
training pair kept, valid and test one line a sentence with all its translations, the same seed
the same bytes, another seed another split, and a bad line named before anything is written."""

import collections
import functools
import json
import os
import random
import subprocess
import sys
import unicodedata

import pytest

from tests.paths import EXAMPLES, checkout_env

SCRIPT = os.path.join(EXAMPLES, "tatoeba_zh_en", "split_tatoeba.py")


def write_cmn(path, pairs):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\ufeff")
        for en, zh in pairs:
            f.write(f"{en}\t{zh}\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (a) & #2 (b)\n")


def generated_pairs(n_sentences=300, seed=0):
    """Chinese sentences of random characters, a third with 2-4 English translations; two are the
    Traditional and the full-width/spaced spelling of another (one sentence after --t2s)."""
    rng = random.Random(seed)
    pairs, sentences = [], set()
    while len(sentences) < n_sentences:
        sentences.add("".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(rng.randint(3, 9))) + "。")
    for i, zh in enumerate(sorted(sentences)):
        for k in range(rng.choice([1, 1, 2, 3, 4])):
            pairs.append((f"Sentence {i} translation {k} .", zh))
    pairs += [("Did you eat ?", "你吃饭了吗？"), ("Have you eaten ?", "你吃飯了嗎？"),
              ("Did you eat yet ?", "你 吃饭了吗?"), ("I have 2 apples .", "我有２个苹果。")]
    rng.shuffle(pairs)
    return pairs


@functools.lru_cache(maxsize=None)
def t2s():
    import opencc

    return opencc.OpenCC("t2s").convert


def key(zh):
    """The test's own grouping: spaces dropped, NFKC, Traditional -> Simplified (OpenCC, as --t2s)."""
    return t2s()("".join(unicodedata.normalize("NFKC", zh).split()))


def run(args, check=True):
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, env=checkout_env(),
                          check=check)


def read(d, name):
    with open(os.path.join(d, name), encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def test_split_groups_and_keeps_every_pair(tmp_path):
    pairs = generated_pairs()
    cmn = tmp_path / "cmn.txt"
    write_cmn(cmn, pairs)
    out = tmp_path / "raw"
    run(["--input", str(cmn), "--out", str(out), "--dev", "40", "--test", "60", "--seed", "3", "--t2s"])
    translations = collections.defaultdict(list)
    for en, zh in pairs:
        if en not in translations[key(zh)]:
            translations[key(zh)].append(en)
    keys = {}
    for split in ("train", "valid", "test"):
        zh, en = read(out, f"{split}.zh"), read(out, f"{split}.en")
        assert len(zh) == len(en) == len(read(out, f"{split}.attribution"))
        keys[split] = {key(z) for z in zh}
        if split == "train":   # every pair of its sentences, each once
            assert collections.Counter(zip(en, map(key, zh))) == collections.Counter(
                (e, key(z)) for e, z in pairs if key(z) in keys["train"])
        else:                  # each sentence once, with all its translations (first one in .en)
            assert len(zh) == len(keys[split]) == {"valid": 40, "test": 60}[split]
            refs = [[r for r in line.split("\t") if r] for line in read(out, f"{split}.refs.tsv")]
            assert [translations[key(z)] for z in zh] == refs
            assert en == [r[0] for r in refs]
            assert len({line.count("\t") for line in read(out, f"{split}.refs.tsv")}) == 1
    assert not keys["train"] & keys["valid"] and not keys["train"] & keys["test"] and not keys["valid"] & keys["test"]
    assert keys["train"] | keys["valid"] | keys["test"] == set(translations)
    # the four spellings of one sentence (Traditional, spaced, full-width '?') are one group
    assert len(translations[key("你吃饭了吗？")]) == 3
    report = json.loads((out / "split.json").read_text())
    assert report["pairs"] == len(pairs) and report["groups"] == len(translations)
    assert report["train"]["pairs"] + report["valid"]["pairs"] + report["test"]["pairs"] == len(pairs)


def test_split_is_seeded(tmp_path):
    cmn = tmp_path / "cmn.txt"
    write_cmn(cmn, generated_pairs())
    files = ("train.zh", "train.en", "valid.zh", "valid.refs.tsv", "test.zh", "test.refs.tsv")
    outs = {}
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        run(["--input", str(cmn), "--out", str(tmp_path / name), "--dev", "40", "--test", "60", "--seed", seed])
        outs[name] = [(tmp_path / name / f).read_bytes() for f in files]
    assert outs["a"] == outs["b"]
    assert outs["a"][4] != outs["c"][4]
    # without --t2s the Traditional spelling is a sentence of its own
    n = json.loads((tmp_path / "a" / "split.json").read_text())["groups"]
    assert n == len({"".join(unicodedata.normalize("NFKC", z).split()) for _, z in generated_pairs()})


@pytest.mark.parametrize("line, expected", [
    ("Hello .\n", "line 3: 1 tab-separated field(s) 'Hello .': expected English, a tab, Chinese"),
    ("Hello .\t \tx\n", "line 3: 3 tab-separated field(s)"),
])
def test_bad_line_is_named_before_writing(tmp_path, line, expected):
    cmn = tmp_path / "cmn.txt"
    cmn.write_text("\ufeffHi .\t嗨。\tx\nRun .\t跑。\tx\n" + line, encoding="utf-8")
    proc = run(["--input", str(cmn), "--out", str(tmp_path / "raw"), "--dev", "1", "--test", "1"], check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith(f"split_tatoeba.py: error: {cmn}, {expected}")
    assert not (tmp_path / "raw").exists()


def test_too_few_sentences_is_refused(tmp_path):
    cmn = tmp_path / "cmn.txt"
    cmn.write_text("\ufeffHi .\t嗨。\tx\nHello .\t嗨。\tx\nRun .\t跑。\tx\n", encoding="utf-8")
    proc = run(["--input", str(cmn), "--out", str(tmp_path / "raw"), "--dev", "1", "--test", "1"], check=False)
    assert proc.returncode == 1 and not (tmp_path / "raw").exists()
    assert proc.stderr.strip() == ("split_tatoeba.py: error: 2 distinct Chinese sentences: too few for 1 dev and 1 test "
                                   "sentences and a training split")


@pytest.mark.parametrize("bad_line", [1, 301])
def test_a_gbk_line_is_named_with_its_encoding(tmp_path, bad_line):
    """Issue 51 item 11: a cmn.txt line in GBK is named by its own number (on main: a traceback,
    UnboundLocalError, for line 1; line 276 for line 301, the text decoder reading ahead), with
    the iconv command for GBK, not Latin-1's; nothing is written."""
    rows = [f"Sentence {i} .\t句子{i}。\tx\n".encode("utf-8") for i in range(400)]
    rows[bad_line - 1] = "We are neighbours .\t我们是邻居。\tx\n".encode("gbk")
    cmn = tmp_path / "cmn.txt"
    cmn.write_bytes(b"".join(rows))
    proc = run(["--input", str(cmn), "--out", str(tmp_path / "raw"), "--dev", "1", "--test", "1"], check=False)
    assert proc.returncode == 1 and not (tmp_path / "raw").exists()
    assert proc.stderr.strip().splitlines() == [
        f"split_tatoeba.py: error: {cmn}, line {bad_line}: not UTF-8 (byte 0xCE at column 21); it looks like "
        f"GBK/GB2312/GB18030: convert it with iconv -f gb18030 -t utf-8"]
