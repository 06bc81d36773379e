"""The Chinese-English recipes' own first steps, each alone and quick (the steps they share are run
whole, once, by test_recipe_zh.py):

* nist_zh_en: paths.sh naming files that are not there, or leaving one unset: one line naming each,
  before anything is written;
* wmt17_zh_en: 01_download.sh from a local mirror laid out as data.statmt.org's (news-commentary
  v12 and the dev and test archives, generated) with a corpus of the user's added; newsdev2017 and
  newstest2017 from their SGML; a test set given in WMT's XML (TEST_SRC/TEST_REF) instead;
* iwslt17_zh_en: 01_download.sh from a mirror laid out as WIT3's two archives (the training
  archive's train.tags and dev2010; the test archive's tst2016/tst2017, the Chinese and the English
  of the same talks in the two directions' archives, talks listed in another order);
* without network, the downloads stop at once with one line.
"""

import os
import subprocess
import time

import pytest

from tests.end_to_end.recipe_runs import EXAMPLES, bash, recipe_env
from tests.end_to_end.zh_recipe_data import corpus, docs, read, refset_sgml, srcset_sgml, tgz, write, zip_file
from tests.fairseq_mgsa.analysis.compare.test_compare_refs import wmt_xml

SIZES = (("train", 30), ("valid", 12), ("test", 12))


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    return corpus(tmp_path_factory.mktemp("zh") / "gen", SIZES)


def download_env(work, **extra):
    env = recipe_env(work, PARSER="treebank", **extra)  # no stanza models to fetch
    del env["SKIP_DOWNLOAD"]
    return env


def test_nist_paths_checked_first_in_one_line(gen, tmp_path):
    paths = tmp_path / "paths.sh"
    paths.write_text(f"NIST_TRAIN_ZH={gen}/train.zh\nNIST_TRAIN_EN={tmp_path}/nowhere.en\n"
                     f"NIST_MT02_SRC={gen}/valid.zh\nNIST_MT02_REF='{gen}/valid.en {tmp_path}/ref1.sgm'\n")
    env = download_env(tmp_path / "work", NIST_PATHS=str(paths), TEST_SETS="mt03")
    proc = bash(os.path.join(EXAMPLES, "nist_zh_en", "01_download.sh"), env, check=False)
    assert proc.returncode == 1
    assert proc.stdout.strip().splitlines()[-1] == (
        f"01_download.sh: error: {paths}: NIST_TRAIN_EN: {tmp_path}/nowhere.en not found (or empty); "
        f"NIST_MT02_REF: {tmp_path}/ref1.sgm not found (or empty); NIST_MT03_SRC is not set; NIST_MT03_REF is not "
        f"set (README.md: what to obtain from LDC and how to list it here)")
    assert not (tmp_path / "work" / "raw").exists()
    proc = bash(os.path.join(EXAMPLES, "nist_zh_en", "01_download.sh"), dict(env, TEST_SETS="mt03 mt07"), check=False)
    assert proc.stdout.strip().splitlines()[-1] == (
        "01_download.sh: error: TEST_SETS='mt03 mt07': mt07 is none of NIST's test sets mt03, mt04, mt05, mt06")


def test_wmt17_from_a_mirror(gen, tmp_path):
    src, tgt = read(f"{gen}/train.zh"), read(f"{gen}/train.en")
    mirror = tmp_path / "mirror" / "wmt17" / "translation-task"
    tgz(mirror / "training-parallel-nc-v12.tgz", {
        "training/news-commentary-v12.zh-en.zh": "\n".join(src[:20]) + "\n",
        "training/news-commentary-v12.zh-en.en": "\n".join(tgt[:20]) + "\n",
        "training/news-commentary-v12.de-en.de": "other pairs\n"})
    dev_zh, dev_en = read(f"{gen}/valid.zh"), read(f"{gen}/valid.en")
    test_zh, test_en = read(f"{gen}/test.zh"), read(f"{gen}/test.en")
    tgz(mirror / "dev.tgz", {"dev/newsdev2017-zhen-src.zh.sgm": srcset_sgml("newsdev2017", dev_zh),
                             "dev/newsdev2017-zhen-ref.en.sgm": refset_sgml("newsdev2017", [dev_en], reverse=(0,))})
    tgz(mirror / "test.tgz", {"test/newstest2017-zhen-src.zh.sgm": srcset_sgml("newstest2017", test_zh),
                              "test/newstest2017-zhen-ref.en.sgm": refset_sgml("newstest2017", [test_en])})
    un_zh, un_en = write(tmp_path / "un.zh", src[20:]), write(tmp_path / "un.en", tgt[20:])
    env = download_env(tmp_path / "work", DATA_STATMT=f"file://{tmp_path}/mirror",
                       WMT17_EXTRA_CORPORA=f"{un_zh}={un_en}")
    script = os.path.join(EXAMPLES, "wmt17_zh_en", "01_download.sh")
    log = bash(script, env).stdout
    raw = tmp_path / "work" / "raw"
    assert read(raw / "train.zh") == src and read(raw / "train.en") == tgt
    # in the reference's order (its documents listed backwards), the source matched to it by document
    order = [i for _, ids in docs(len(dev_en))[::-1] for i in ids]
    assert read(raw / "valid.zh") == [dev_zh[i] for i in order] and read(raw / "valid.en") == [dev_en[i] for i in order]
    assert read(raw / "newstest2017.zh") == test_zh and read(raw / "newstest2017.en") == test_en
    assert "01_download: done already" in bash(script, env).stdout
    assert "raw corpus in" in log

    # another test set in WMT's XML (a source and two translators' references in one file)
    xml = tmp_path / "wmttest2021.zh-en.xml"
    refs = [[f"r{k} sentence {i}" for i in range(48)] for k in range(2)]
    xml.write_text(wmt_xml(refs), encoding="utf-8")
    env = dict(env, WORKDIR=str(tmp_path / "work2"), TEST_SETS="wmt21", TEST_SRC=str(xml), TEST_REF=str(xml))
    bash(script, env)
    raw = tmp_path / "work2" / "raw"
    assert [read(raw / "wmt21.en"), read(raw / "wmt21.en.ref1")] == refs
    assert len(read(raw / "wmt21.zh")) == 48 and not (raw / "newstest2017.zh").exists()


def test_iwslt17_from_a_mirror(gen, tmp_path):
    src, tgt = read(f"{gen}/train.zh"), read(f"{gen}/train.en")

    def talks(lang, lines, order=1, with_ids=True):
        """IWSLT's .xml: an <mteval> with a <srcset> of talks, their metadata around the segments."""
        out = ['<?xml version="1.0" encoding="UTF-8"?>', "<mteval>", f'<srcset setid="iwslt2017" srclang="{lang}">']
        talks_ = [(f"{2200 + d}", list(range(d * 4, min(len(lines), d * 4 + 4)))) for d in range((len(lines) + 3) // 4)]
        for docid, ids in talks_[::order]:
            out += [f'<doc docid="{docid}" genre="lectures">', "<url>http://www.ted.com/talks/x</url>",
                    "<description>TED Talk Subtitles and Transcript: a talk</description>",
                    f"<talkid>{docid}</talkid>", "<title>a title</title>"]
            out += [f'<seg id="{j + 1}"> {lines[i]} </seg>' for j, i in enumerate(ids)]
            out.append("</doc>")
        return "\n".join(out + ["</srcset>", "</mteval>"]) + "\n"

    def tags(lines):
        """train.tags: the talks' text between their metadata lines."""
        return "\n".join(["<url>http://www.ted.com/talks/x</url>", "<keywords>talks</keywords>", "<talkid>1</talkid>",
                          "<title>a title</title>", "<description>a talk</description>"] + lines) + "\n"
    dev_zh, dev_en = read(f"{gen}/valid.zh"), read(f"{gen}/valid.en")
    test_zh, test_en = read(f"{gen}/test.zh"), read(f"{gen}/test.en")
    mirror = tmp_path / "mirror"
    zip_file(mirror / "trnted" / "zh-en.zip", {
        "zh-en/train.tags.zh-en.zh": tags(src), "zh-en/train.tags.zh-en.en": tags(tgt),
        "zh-en/IWSLT17.TED.dev2010.zh-en.zh.xml": talks("zh", dev_zh),
        "zh-en/IWSLT17.TED.dev2010.zh-en.en.xml": talks("en", dev_en)})
    tgz(mirror / "test" / "zh" / "en" / "zh-en.tgz", {
        "zh-en/IWSLT17.TED.tst2016.zh-en.zh.xml": talks("chinese", test_zh[:6]),
        "zh-en/IWSLT17.TED.tst2017.zh-en.zh.xml": talks("chinese", test_zh, order=-1)})
    tgz(mirror / "test" / "en" / "zh" / "en-zh.tgz", {
        "en-zh/IWSLT17.TED.tst2016.en-zh.en.xml": talks("english", test_en[:6]),
        "en-zh/IWSLT17.TED.tst2017.en-zh.en.xml": talks("english", test_en)})
    env = download_env(tmp_path / "work", IWSLT_TRAIN_URL=f"file://{mirror}/trnted/zh-en.zip",
                       WIT3_TEST_URL=f"file://{mirror}/test")
    bash(os.path.join(EXAMPLES, "iwslt17_zh_en", "01_download.sh"), env)
    raw = tmp_path / "work" / "raw"
    # the metadata lines gone, the title's and description's text kept (as fairseq's IWSLT script keeps them)
    assert read(raw / "train.zh") == ["a title", "a talk"] + src
    assert read(raw / "train.en") == ["a title", "a talk"] + tgt
    assert read(raw / "valid.zh") == dev_zh and read(raw / "valid.en") == dev_en
    assert read(raw / "tst2016.zh") == test_zh[:6] and read(raw / "tst2016.en") == test_en[:6]
    assert read(raw / "tst2017.zh") == test_zh and read(raw / "tst2017.en") == test_en  # matched by talk


@pytest.mark.parametrize("name,url_vars", [
    ("wmt17_zh_en", {"DATA_STATMT": "http://mirror.invalid"}),
    ("iwslt17_zh_en", {"IWSLT_TRAIN_URL": "http://mirror.invalid/zh-en.zip"}),
])
def test_download_without_network_fails_fast_with_one_line(tmp_path, name, url_vars):
    env = download_env(tmp_path / "work", CONNECT_TIMEOUT="2", **url_vars)
    t0 = time.time()
    proc = subprocess.run(["bash", os.path.join(EXAMPLES, name, "01_download.sh")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 1 and time.time() - t0 < 30
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("01_download.sh: error: cannot reach http://mirror.invalid"), last
