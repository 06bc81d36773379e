"""Real Chinese text through the pipeline: segmentation, parsing and alignment of test sets, timed
per stage, with the sentences whose trees do not fit (docs/tatoeba.md, "Real text", says how each
stage runs and gives the figures). A set is its Chinese and its English as text, one segment a line
(examples/common/test_set_text.py makes them from mteval XML or SGML, segments matched by id).
Writes benchmarks/runs/zh_real_text.json (or ``--out``).

    python -m benchmarks.zh_real_text --parser /work/data/parsers/sinica_zh --t2s --pair RAW/tst2016.zh RAW/tst2016.en
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.run_outputs import default_out, write_json

def paired(zh_path, en_path):
    """The lines of both files, which must be as many."""
    with open(zh_path, encoding="utf-8") as fz, open(en_path, encoding="utf-8") as fe:
        zh, en = fz.read().splitlines(), fe.read().splitlines()
    if len(zh) != len(en):
        sys.exit(f"zh_real_text.py: error: {en_path} has {len(en)} lines, {zh_path} {len(zh)} (one segment a "
                 f"line in both expected)")
    return zh, en


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def per_1000(seconds, n):
    return round(1000 * seconds / n, 2)


def run_set(a, zh_path, en_path, work):
    name = os.path.splitext(os.path.basename(zh_path))[0]
    zh, en = paired(zh_path, en_path)
    n = len(zh)
    pref = os.path.join(work, name)
    write(pref + ".raw.zh", zh)
    load = {"before": os.getloadavg()}

    from mgsa_preprocess.segment_zh import Segmenter
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    seg = Segmenter(t2s=a.t2s)
    seg.segment(zh[0])  # jieba loads its dictionary on the first line: not counted
    t0 = time.perf_counter()
    words = [seg.segment(line) for line in zh]
    t_seg = time.perf_counter() - t0
    write(pref + ".zh", words)
    norm, tok = MosesPunctNormalizer(lang="en"), MosesTokenizer(lang="en")
    write(pref + ".en", [tok.tokenize(norm.normalize(line), return_str=True, escape=True) for line in en])

    import torch

    torch.set_num_threads(1)
    from mgsa_preprocess.parse import StanzaParser, parse_lines

    parser = StanzaParser("zh", device="cpu", model_dir=a.parser, threads=1)
    t0 = time.perf_counter()
    parse_lines(parser, pref + ".zh", pref + ".zh.tree", style="none", lenient=True, progress=False)
    t_parse = time.perf_counter() - t0

    dest = pref + "-bin"
    subprocess.run(["rm", "-rf", dest], check=True)
    cmd = [sys.executable, "-m", "mgsa_preprocess.cli", "-s", "zh", "-t", "en", "--trainpref", pref,
           "--destdir", dest, "--trees-suffix", "tree", "--levels", str(a.levels), "--lenient", "--workers", "1",
           "--no-progress-bar"]
    cmd += ["--bpe-codes", a.bpe_codes, "--workdir", dest + "/bpe"] if a.bpe_codes else ["--subword-style", "none"]
    cmd += ["--tgt-bpe-codes", a.tgt_bpe_codes] if a.tgt_bpe_codes else []
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    t_align = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"zh_real_text.py: error: mgsa-preprocess on {pref}: {proc.stderr.strip().splitlines()[-1]}")
    load["after"] = os.getloadavg()
    with open(os.path.join(dest, "mgsa_preprocess_report.json"), encoding="utf-8") as f:
        report = json.load(f)
    train = report["splits"]["train"]
    refused = sum(train.get("repaired", {}).values())
    return name, {
        "files": [zh_path, en_path], "sentences": n, "words": train["words"], "subwords": train["subwords"],
        "refused": refused, "refused_why": train.get("repaired", {}), "refused_examples": train.get("repaired_examples", []),
        "levels": train["levels"], "normalised": train.get("normalisation", {}), "tags_top10": dict(list(train.get("tag_counts", {}).items())[:10]),
        "seconds": {"segment": round(t_seg, 2), "parse": round(t_parse, 2), "align": round(t_align, 2)},
        "seconds_per_1000": {"segment": per_1000(t_seg, n), "parse": per_1000(t_parse, n),
                             "align": per_1000(t_align, n)},
        "load": {k: [round(x, 2) for x in v] for k, v in load.items()},
    }


def get_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pair", nargs=2, action="append", required=True, metavar=("ZH", "EN"),
                   help="a test set: its Chinese and its English, one segment a line (repeat for each set)")
    p.add_argument("--parser", required=True, help="a model folder of mgsa-train-parser (mgsa_parser.json)")
    p.add_argument("--t2s", action="store_true", help="Traditional characters made Simplified before segmenting")
    p.add_argument("--bpe-codes", help="subword-nmt codes of the Chinese side (else words, no subwords)")
    p.add_argument("--tgt-bpe-codes", help="subword-nmt codes of the English side")
    p.add_argument("--levels", type=int, default=3)
    p.add_argument("--work", help="folder for the text, trees and binaries (default: a temporary one)")
    p.add_argument("--out", default=default_out("zh_real_text.json"))
    return p


def main(argv=None):
    a = get_parser().parse_args(argv)
    if not os.path.isfile(os.path.join(a.parser, "mgsa_parser.json")):
        sys.exit(f"zh_real_text.py: error: {a.parser}: no mgsa_parser.json (a model folder of mgsa-train-parser expected)")
    for zh_path, en_path in a.pair:
        for path in (zh_path, en_path):
            if not os.path.isfile(path):
                sys.exit(f"zh_real_text.py: error: {path}: no such file")
        paired(zh_path, en_path)  # every set's line counts checked before any work
    work = a.work or tempfile.mkdtemp(prefix="zh_real_text.")
    os.makedirs(work, exist_ok=True)
    result = {"parser": os.path.abspath(a.parser), "t2s": a.t2s, "bpe_codes": [a.bpe_codes, a.tgt_bpe_codes],
              "cpu": os.cpu_count(), "sets": {}}
    for zh_path, en_path in a.pair:
        name, r = run_set(a, zh_path, en_path, work)
        result["sets"][name] = r
        phrases = ", ".join(f"level {lv['level']}: {lv['phrases']} ({lv['mean_phrase_words']} words)" for lv in r["levels"])
        s = r["seconds_per_1000"]
        print(f"{name}: {r['sentences']} sentences, {r['words']} words, refused {r['refused']}; phrases {phrases}; "
              f"s per 1,000 sentences: segment {s['segment']}, parse {s['parse']}, align {s['align']} "
              f"(load {r['load']['before'][0]:.2f} -> {r['load']['after'][0]:.2f})")
    write_json(a.out, result, indent=1, ensure_ascii=False)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
