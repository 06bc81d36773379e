"""mgsa-segment-zh (preprocess/segment_zh.py): the expected tokens are written out by hand."""

import gzip
import lzma
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mgsa_preprocess import segment_zh
from mgsa_preprocess.errors import PreprocessError
from mgsa_preprocess.segment_zh import Segmenter, cache_dir, segment_file, segment_line
from tests.paths import checkout_env, command


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory, monkeypatch):
    """jieba's cache in a folder of the test session's, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


def test_full_width_punctuation_is_a_token_of_its_own():
    assert segment_line("他说：“你好！”然后走了。") == "他 说 ： “ 你好 ！ ” 然后 走 了 。"
    assert segment_line("（北京）《读书》，「好」；对吗？") == "（ 北京 ） 《 读书 》 ， 「 好 」 ； 对 吗 ？"
    # a run of ellipsis or dash characters is one token
    assert segment_line("我不知道……真的——吗") == "我 不 知道 …… 真的 —— 吗"


def test_latin_letters_and_digits_stay_whole():
    assert segment_line("我们用GPU在2017年训练") == "我们 用 GPU 在 2017 年 训练"
    assert segment_line("准确率是3.14%，速度１２．５倍") == "准确率 是 3.14 % ， 速度 １２．５ 倍"
    assert segment_line("ＧＰＵ和iPhone6") == "ＧＰＵ 和 iPhone6"


def test_existing_spaces_are_token_boundaries():
    assert segment_line("  我们 用GPU  ") == "我们 用 GPU"
    assert segment_line("北\u3000京") == "北 京"  # the ideographic space separates too
    # no token crosses a space: 北京 is a dictionary word, but not across the user's space
    assert segment_line("北 京") == "北 京" and segment_line("北京") == "北京"
    # a byte-order mark (cmn.txt's first line has one) and the zero-width space are no tokens
    assert segment_line("\ufeff我们用GPU") == "我们 用 GPU" and segment_line("北\u200b京") == "北 京"


def test_traditional_to_simplified():
    assert segment_line("我們的電腦很好用。", t2s=True) == "我们 的 电脑 很 好 用 。"
    assert segment_line("我們的電腦", t2s=False) == "我們 的 電腦"  # unchanged without --t2s


def test_user_dictionary_words_are_kept_whole(tmp_path):
    text = "克拉拉遇见了鲍里斯"
    assert segment_line(text) != "克拉拉 遇见了 鲍里斯"  # jieba alone cuts otherwise
    d = tmp_path / "user.dict"
    d.write_text("克拉拉 1000000\n遇见了 1000000 v\n\n鲍里斯\n", encoding="utf-8")
    assert Segmenter(user_dict=str(d)).segment(text) == "克拉拉 遇见了 鲍里斯"


@pytest.mark.parametrize("line, message", [
    ("克拉拉 1.5\n", "expected 'word [frequency] [tag]'"),
    ("T恤 5\n", "'T恤' is not made of Chinese characters only"),
])
def test_bad_user_dictionary_line_is_named(tmp_path, line, message):
    d = tmp_path / "user.dict"
    d.write_text("北京 10\n" + line, encoding="utf-8")
    with pytest.raises(PreprocessError) as e:
        Segmenter(user_dict=str(d))
    assert str(e.value).startswith(f"{d}:2: {message}")


def test_empty_lines_stay_and_the_line_count_is_kept(tmp_path):
    src = tmp_path / "in.zh.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        f.write("你好。\n\n   \n北京\r\n我们用GPU")  # blank lines, a CRLF, no final newline
    out, log = tmp_path / "out.zh", tmp_path / "seg.log"
    summary = segment_file(str(src), str(out), log_path=str(log), quiet=True)
    assert out.read_text(encoding="utf-8") == "你好 。\n\n\n北京\n我们 用 GPU\n"
    assert summary["lines"] == 5 and summary["tokens"] == 6
    assert "5/5 lines" in log.read_text() and "5 lines, 6 tokens" in log.read_text()


def test_console_script_refuses_non_utf8_naming_file_and_line(tmp_path):
    src, out = tmp_path / "in.zh", tmp_path / "out.zh"
    src.write_bytes("你好\n北京\n".encode("utf-8") + "我們\n".encode("big5"))
    out.write_text("kept\n")
    r = subprocess.run(command("mgsa-segment-zh", "--input", src, "--output", out), capture_output=True, text=True,
                       env=checkout_env(XDG_CACHE_HOME=str(tmp_path / "cache")), timeout=120)
    assert r.returncode == 1
    assert r.stderr.startswith(f"mgsa-segment-zh: error: {src}:3: not UTF-8 (byte 0x")
    assert r.stderr.count("\n") == 1
    assert out.read_text() == "kept\n"  # nothing overwritten


def test_console_script_writes_quietly_and_caches_in_the_user_folder(tmp_path):
    src, out = tmp_path / "in.zh", tmp_path / "out.zh"
    src.write_text("我們用GPU訓練模型。\n", encoding="utf-8")
    env = checkout_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    r = subprocess.run(command("mgsa-segment-zh", "--input", src, "--output", out, "--t2s", "--quiet"),
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert out.read_text(encoding="utf-8") == "我们 用 GPU 训练 模型 。\n"
    assert (tmp_path / "cache" / "mgsa-preprocess" / "jieba" / "jieba.cache").is_file()


def test_output_folder_is_made_and_an_unwritable_output_is_named(tmp_path):
    src = tmp_path / "in.zh"
    src.write_text("北京\n", encoding="utf-8")
    segment_file(str(src), str(tmp_path / "new" / "out.zh"), quiet=True)
    assert (tmp_path / "new" / "out.zh").read_text(encoding="utf-8") == "北京\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(PreprocessError) as e:
        segment_file(str(src), str(tmp_path / "file" / "out.zh"), quiet=True)
    assert str(e.value).startswith(f"{tmp_path / 'file' / 'out.zh'}: cannot write: ")


def test_tokens_put_back_together_give_the_line_without_its_spaces():
    line = "2017年，ＧＰＵ的速度是3.5倍…… 北京 ＠“甲乙”～～x_y"
    tokens = Segmenter().tokens(line)
    assert "".join(tokens) == "".join(line.split()) and all(t and not any(c.isspace() for c in t) for t in tokens)


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(list("北京大学生我们的了在用GPUgpu2017１２．５.,，。！“”…—-_ \u3000\ufeffàé😀") + ["\u4e00"]
                              + ["\u0301", "\ufe0f", "\u200d", "\u200c", "\u2060", "\u00ad"]),
               max_size=30))
def test_no_character_is_lost_or_made_and_no_token_holds_a_space(line):
    tokens = segment_line(line)
    assert tokens == " ".join(tokens.split())  # single spaces between tokens, none at the ends
    assert tokens.replace(" ", "") == "".join(line.replace("\ufeff", " ").split())


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == str(tmp_path / "mgsa-preprocess" / "jieba")


def test_traditional_user_dictionary_words_apply_with_t2s(tmp_path):
    d = tmp_path / "user.dict"
    d.write_text("深度學習模型 1000000\n", encoding="utf-8")
    assert Segmenter(user_dict=str(d)).segment("深度學習模型") == "深度學習模型"
    # the text is converted to Simplified: the dictionary's word is too, so it still applies
    assert Segmenter(t2s=True, user_dict=str(d)).segment("深度學習模型很好") == "深度学习模型 很 好"


@pytest.mark.parametrize("line, tokens", [
    ("我爱你❤️！", ["我爱你", "❤️", "！"]),  # a variation selector stays on its heart
    ("家庭👨\u200d👩\u200d👧好", ["家庭", "👨\u200d👩\u200d👧", "好"]),  # one emoji of three, joined by U+200D
    ("Jose\u0301来了", ["Jose\u0301", "来", "了"]),  # a combining accent stays on its letter
    ("a\u200cb和c\u2060d", ["a\u200cb", "和", "c\u2060d"]),  # joiners inside a word keep it whole
    ("今天\u2060很好", ["今天\u2060", "很", "好"]),  # a lone word joiner goes with the piece before it
    ("\u0301北京 \u200d", ["\u0301北京", "\u200d"]),  # nothing before: the next piece, or alone
])
def test_grapheme_clusters_stay_whole(line, tokens):
    assert Segmenter().tokens(line) == tokens


def test_gz_output_is_written_compressed(tmp_path):
    src, out = tmp_path / "in.zh", tmp_path / "train.zh.gz"
    src.write_text("我们用GPU\n北京\n", encoding="utf-8")
    segment_file(str(src), str(out), quiet=True)
    with gzip.open(out, "rt", encoding="utf-8") as f:
        assert f.read() == "我们 用 GPU\n北京\n"
    assert gzip.decompress(out.read_bytes()) == "我们 用 GPU\n北京\n".encode()
    assert b"train.zh\0" in out.read_bytes()[:40]  # the header names the file, not its temporary name
    segment_file(str(out), str(tmp_path / "again.zh.xz"), quiet=True)  # what it wrote reads back, and xz too
    assert lzma.decompress((tmp_path / "again.zh.xz").read_bytes()) == "我们 用 GPU\n北京\n".encode()


def test_an_output_folder_is_refused_before_any_work(tmp_path, monkeypatch):
    src = tmp_path / "in.zh"
    src.write_text("北京\n", encoding="utf-8")
    (tmp_path / "out").mkdir()
    made = []
    monkeypatch.setattr(segment_zh, "Segmenter", lambda *a: made.append(a))
    with pytest.raises(PreprocessError) as e:
        segment_file(str(src), str(tmp_path / "out"), quiet=True)
    assert str(e.value) == f"{tmp_path / 'out'}: --output is a folder; give the name of the file to write"
    assert made == [] and list((tmp_path / "out").iterdir()) == []
