"""The shell recipes' scripts of examples/ (wmt14_en_de, iwslt14_de_en) run one at a time, on
their own, without training (the recipes run whole are in test_recipe_runs.py):

* 01_download.sh without the network stops at once with one line saying what to do (the
  download URLs are pointed at an unresolvable host, so this holds on machines with network),
  and with archives laid out as the real ones, served from file:// URLs, it writes the raw files;
* bad input stops with one line naming the file.
"""

import os
import shutil
import subprocess
import time

import pytest

from mgsa_preprocess.synthetic import write_corpus

from tests.end_to_end.recipe_runs import EXAMPLES, bash, recipe_env


@pytest.mark.parametrize("name,url_vars", [
    ("wmt14_en_de", {"STATMT": "http://mirror.invalid", "DATA_STATMT": "http://mirror.invalid"}),
    ("iwslt14_de_en", {"IWSLT_URL": "http://mirror.invalid/de-en.tgz"}),
])
def test_download_without_network_fails_fast_with_one_line(tmp_path, name, url_vars):
    env = recipe_env(tmp_path / "work", CONNECT_TIMEOUT="2", **url_vars)
    del env["SKIP_DOWNLOAD"]
    t0 = time.time()
    proc = subprocess.run(["bash", os.path.join(EXAMPLES, name, "01_download.sh")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode != 0
    assert time.time() - t0 < 20
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("01_download.sh: error: ") and "SKIP_DOWNLOAD=1 RAW_DIR=" in lines[0], lines[0]
    assert not (tmp_path / "work" / "orig").exists() or not os.listdir(tmp_path / "work" / "orig")


def make_tgz(path, files):
    """A .tgz holding {name inside the archive: text}."""
    import io
    import tarfile

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def sgm(lines):
    return "<refset>\n<doc docid=\"d1\">\n" + "".join(f'<seg id="{i}"> {x} </seg>\n' for i, x in
                                                     enumerate(lines, 1)) + "</doc>\n</refset>\n"


def test_wmt_download_from_a_local_mirror(tmp_path):
    """01_download.sh's own work (fetch, extract, assemble the raw files) on archives laid out
    as statmt.org's, served from file:// URLs; stanza's models are not fetched (TREES_DIR)."""
    from mgsa_preprocess.synthetic import generate

    pairs = generate(40, seed=7)
    sides = (("en", [p[0] for p in pairs]), ("de", [p[1] for p in pairs]))
    src, tgt = sides[0][1], sides[1][1]

    def corpus(name, lo, hi):  # {name.en: lines lo..hi, name.de: the same}
        return {f"{name}.{lang}": "".join(x + "\n" for x in side[lo:hi]) for lang, side in sides}

    mirror = tmp_path / "mirror"
    make_tgz(mirror / "wmt13" / "training-parallel-europarl-v7.tgz", corpus("training/europarl-v7.de-en", 0, 10))
    make_tgz(mirror / "wmt13" / "training-parallel-commoncrawl.tgz", corpus("commoncrawl.de-en", 10, 20))
    make_tgz(mirror / "wmt14" / "training-parallel-nc-v9.tgz", corpus("training/news-commentary-v9.de-en", 20, 25))
    make_tgz(mirror / "wmt17" / "translation-task" / "dev.tgz", corpus("dev/newstest2013", 25, 30))
    make_tgz(mirror / "wmt14" / "test-full.tgz", {"test-full/newstest2014-deen-src.en.sgm": sgm(src[30:]),
                                                  "test-full/newstest2014-deen-ref.de.sgm": sgm(tgt[30:])})
    work = tmp_path / "work"
    env = recipe_env(work, STATMT=f"file://{mirror}", DATA_STATMT=f"file://{mirror}", TREES_DIR=str(tmp_path))
    del env["SKIP_DOWNLOAD"]
    script = os.path.join(EXAMPLES, "wmt14_en_de", "01_download.sh")
    log = bash(script, env).stdout
    assert "raw corpus in" in log and "25 train, 5 valid, 10 test pairs" in log
    raw = work / "raw"
    for lang, side in sides:
        assert (raw / f"train.{lang}").read_text().splitlines() == side[:25]
        assert (raw / f"valid.{lang}").read_text().splitlines() == side[25:30]
        assert (raw / f"test.{lang}").read_text().splitlines() == side[30:]
    assert "01_download: done already" in bash(script, env).stdout
    # issue 45, point 2 (the markers): without TREES_DIR the parser's models are part of the
    # download; the marker said "done already" and step 03 then sent the user back to step 01.
    # Now a product not there redoes the step (here stanza's hub is unreachable: one line).
    models = tmp_path / "stanza"
    proc = bash(script, dict(env, TREES_DIR="", STANZA_DIR=str(models),
                             STANZA_RESOURCES_URL="http://mirror.invalid/stanza"), check=False)
    assert f"01_download: redoing it: {models}/en/constituency is not there" in proc.stdout
    assert proc.returncode == 1 and proc.stdout.strip().splitlines()[-1].startswith(
        "01_download.sh: error: could not fetch stanza's models for 'en'")


def test_iwslt_download_from_a_local_mirror(tmp_path):
    """The same for IWSLT14: the talks' metadata lines dropped, title and description kept as
    text, every 23rd pair to valid, the five test sets concatenated in fairseq's order."""
    from mgsa_preprocess.synthetic import generate

    pairs = generate(60, seed=8)
    de, en = [p[0] for p in pairs], [p[1] for p in pairs]

    def talks(side, title):
        meta = ["<url>http://talks/1</url>", "<keywords>talk</keywords>", "<talkid>1</talkid>",
                f"<title>{title}</title>", f"<description>{title} too</description>"]
        return "".join(x + "\n" for x in meta + side[:48])

    tests = ["IWSLT14.TED.dev2010", "IWSLT14.TEDX.dev2012", "IWSLT14.TED.tst2010", "IWSLT14.TED.tst2011",
             "IWSLT14.TED.tst2012"]
    files = {"de-en/train.tags.de-en.de": talks(de, "Titel"), "de-en/train.tags.de-en.en": talks(en, "Title")}
    for k, t in enumerate(tests):
        for lang, side in (("de", de), ("en", en)):
            files[f"de-en/{t}.de-en.{lang}.xml"] = sgm(side[48 + 2 * k:50 + 2 * k])
    archive = tmp_path / "mirror" / "de-en.tgz"
    make_tgz(archive, files)
    work = tmp_path / "work"
    env = recipe_env(work, IWSLT_URL=f"file://{archive}", TREES_DIR=str(tmp_path))
    del env["SKIP_DOWNLOAD"]
    log = bash(os.path.join(EXAMPLES, "iwslt14_de_en", "01_download.sh"), env).stdout
    raw = work / "raw"
    for lang, side, title in (("de", de, "Titel"), ("en", en, "Title")):
        text = [title, f"{title} too"] + side[:48]  # 50 lines: the 23rd and 46th go to valid
        assert (raw / f"valid.{lang}").read_text().splitlines() == [text[22], text[45]]
        assert (raw / f"train.{lang}").read_text().splitlines() == [x for i, x in enumerate(text, 1) if i % 23]
        assert (raw / f"test.{lang}").read_text().splitlines() == side[48:58]
    assert "48 train, 2 valid, 10 test pairs" in log


def test_bad_raw_files_and_missing_parser_stop_with_one_line(tmp_path):
    raw = tmp_path / "raw"
    write_corpus(str(raw), (("train", 12), ("valid", 3), ("test", 4)), seed=6, src="en", tgt="de")
    script = os.path.join(EXAMPLES, "wmt14_en_de", "01_download.sh")

    os.remove(raw / "valid.de")
    proc = bash(script, recipe_env(tmp_path / "work", raw), check=False)
    assert proc.returncode == 1 and proc.stdout.strip().splitlines()[-1] == \
        f"01_download.sh: error: {raw}/valid.de not found (or empty)"

    shutil.copy(raw / "valid.en", raw / "valid.de")
    with open(raw / "test.de", "a") as f:
        f.write("one line too many\n")
    proc = bash(script, recipe_env(tmp_path / "work", raw), check=False)
    assert proc.returncode == 1
    assert proc.stdout.strip().splitlines()[-1] == \
        f"01_download.sh: error: {raw}/test.en has 4 lines but {raw}/test.de has 5: the two sides must be parallel"

    # no gold trees and no stanza model: say where the models go, or to give trees
    env = recipe_env(tmp_path / "work", raw, TREES_DIR="", STANZA_DIR=str(tmp_path / "no_models"))
    proc = subprocess.run(["bash", os.path.join(EXAMPLES, "wmt14_en_de", "03_parse.sh")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 1
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("03_parse.sh: error: no stanza constituency model for 'en'") and "TREES_DIR" in line
