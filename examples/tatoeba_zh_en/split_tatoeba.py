"""Split Tatoeba's Mandarin-English pairs (cmn.txt) into train, valid and test, grouped by Chinese sentence.

    python examples/tatoeba_zh_en/split_tatoeba.py --input cmn.txt --out raw/ [--dev 1000] [--test 1500] [--seed 1] [--t2s]

cmn.txt has one pair a line: English, a tab, Chinese, a tab, the attribution (a byte-order mark
may open line 1), in UTF-8 (as Tatoeba gives it; a file saved as GBK/GB18030 or Big5 is refused
with the iconv command that converts it, e.g. iconv -f gb18030 -t utf-8). A Chinese sentence
with several English translations is one group: all its pairs go to one split. The groups are shuffled with --seed (Python's random, so the same file and
seed give the same split on every machine), the first --dev groups are the validation split, the
next --test the test split, the rest train. Writes into --out:

    train.{zh,en}            every pair of the training groups (one pair a line)
    {valid,test}.{zh,en}     one line a group: the Chinese sentence once, its first English translation
    {valid,test}.refs.tsv    one line a group: all its English translations, tab-separated, padded
                             with empty fields to the split's most (mgsa-compare --refs-tsv)
    {split}.attribution      the attributions of the pairs each line stands for (CC-BY 2.0 FR)
    split.json               the counts

The group's key is the Chinese text with white space removed, NFKC-normalised (full-width Latin
and digits folded) and, with --t2s, converted to Simplified characters (OpenCC's t2s): the key
is what the later steps see, so two spellings of one sentence that the segmentation makes equal
never land in two splits. The same English sentence may translate Chinese sentences of two
splits (Tatoeba links one English sentence to several Chinese ones); split.json counts them.
"""

import argparse
import json
import os
import random
import sys
import unicodedata

PROG = "split_tatoeba.py"


class SplitError(Exception):
    pass


def t2s_converter():
    try:
        import opencc  # opencc-python-reimplemented
    except ImportError:
        raise SplitError("--t2s needs OpenCC's converter: pip install opencc-python-reimplemented")
    return opencc.OpenCC("t2s").convert


def group_key(zh, t2s=None):
    key = "".join(unicodedata.normalize("NFKC", zh).split())
    return t2s(key) if t2s else key


def read_pairs(path):
    """[(en, zh, attribution)] of cmn.txt; a bad line stops with its file and number."""
    if not os.path.isfile(path):
        raise SplitError(f"{path}: no such file (Tatoeba's cmn.txt expected)")
    from mgsa_preprocess.errors import PreprocessError
    from mgsa_preprocess.text_files import lines  # decoded a line at a time: a bad byte is named at its line
    pairs = []
    try:
        for n, line in lines(path, "Tatoeba's cmn.txt"):
            line = line.rstrip("\r\n")
            if n == 1 and line.startswith("\ufeff"):
                line = line[1:]  # the byte-order mark, not text
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
                raise SplitError(f"{path}, line {n}: {len(fields)} tab-separated field(s) "
                                 f"{line[:60]!r}: expected English, a tab, Chinese (then the attribution)")
            pairs.append((fields[0].strip(), fields[1].strip(), fields[2].strip() if len(fields) > 2 else ""))
    except PreprocessError as e:  # not UTF-8 (with the encoding it looks like), unreadable
        raise SplitError(f"{path}, line {e.line}: {e.message}" if e.line else str(e)) from None
    if not pairs:
        raise SplitError(f"{path}: no pairs (English, a tab, Chinese on each line expected)")
    return pairs


def split_groups(pairs, dev, test, seed, t2s=None):
    """{'train'|'valid'|'test': [[pair index, ...] a group]}, the groups in shuffled order."""
    groups = {}
    for i, (_, zh, _) in enumerate(pairs):
        groups.setdefault(group_key(zh, t2s), []).append(i)
    order = list(groups.values())          # first appearance: independent of hashing
    if dev + test >= len(order):
        raise SplitError(f"{len(order)} distinct Chinese sentences: too few for {dev} dev and {test} test "
                         "sentences and a training split")
    random.Random(seed).shuffle(order)
    return {"valid": order[:dev], "test": order[dev:dev + test], "train": order[dev + test:]}


def write_lines(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(r + "\n" for r in rows)


def write_split(out, name, groups, pairs):
    if name == "train":
        idx = [i for g in groups for i in g]
        write_lines(os.path.join(out, "train.zh"), [pairs[i][1] for i in idx])
        write_lines(os.path.join(out, "train.en"), [pairs[i][0] for i in idx])
        write_lines(os.path.join(out, "train.attribution"), [pairs[i][2] for i in idx])
        return {"pairs": len(idx), "sentences": len(groups)}
    refs = []
    for g in groups:
        seen = []
        for i in g:                         # the same English twice in a group is one reference
            if pairs[i][0] not in seen:
                seen.append(pairs[i][0])
        refs.append(seen)
    width = max(len(r) for r in refs)
    write_lines(os.path.join(out, f"{name}.zh"), [pairs[g[0]][1] for g in groups])
    write_lines(os.path.join(out, f"{name}.en"), [r[0] for r in refs])
    write_lines(os.path.join(out, f"{name}.refs.tsv"), ["\t".join(r + [""] * (width - len(r))) for r in refs])
    write_lines(os.path.join(out, f"{name}.attribution"), [" | ".join(pairs[i][2] for i in g) for g in groups])
    counts = {}
    for r in refs:
        counts[len(r)] = counts.get(len(r), 0) + 1
    return {"pairs": sum(len(g) for g in groups), "sentences": len(groups), "references": sum(map(len, refs)),
            "max_references": width, "sentences_by_references": {str(k): counts[k] for k in sorted(counts)}}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True, help="Tatoeba's cmn.txt (English TAB Chinese TAB attribution)")
    p.add_argument("--out", required=True, help="folder for the splits")
    p.add_argument("--dev", type=int, default=1000, help="Chinese sentences in valid (default: 1000)")
    p.add_argument("--test", type=int, default=1500, help="Chinese sentences in test (default: 1500)")
    p.add_argument("--seed", type=int, default=1, help="the shuffle's seed (default: 1)")
    p.add_argument("--t2s", action="store_true",
                   help="group Traditional and Simplified spellings of a sentence together (as --t2s segments them)")
    a = p.parse_args(argv)
    try:
        if a.dev < 1 or a.test < 1:
            raise SplitError(f"--dev and --test must be at least 1 (got {a.dev}, {a.test})")
        if os.path.exists(a.out) and os.path.samefile(os.path.dirname(os.path.abspath(a.input)), a.out):
            raise SplitError(f"--out {a.out} is the input's folder: give the splits a folder of their own")
        t2s = t2s_converter() if a.t2s else None
        pairs = read_pairs(a.input)
        splits = split_groups(pairs, a.dev, a.test, a.seed, t2s)
    except SplitError as e:
        sys.exit(f"{PROG}: error: {e}")
    os.makedirs(a.out, exist_ok=True)
    report = {"input": os.path.abspath(a.input), "pairs": len(pairs), "seed": a.seed, "t2s": a.t2s,
              "groups": sum(len(v) for v in splits.values())}
    for name in ("train", "valid", "test"):
        report[name] = write_split(a.out, name, splits[name], pairs)
    train_en = {pairs[i][0] for g in splits["train"] for i in g}
    for name in ("valid", "test"):
        report[name]["english_also_in_train"] = sum(1 for g in splits[name] if any(pairs[i][0] in train_en for i in g))
    with open(os.path.join(a.out, "split.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    print(f"{PROG}: {len(pairs)} pairs, {report['groups']} Chinese sentences -> {a.out}: "
          + ", ".join(f"{n} {report[n]['sentences']} sentences ({report[n]['pairs']} pairs)"
                      for n in ("train", "valid", "test")), file=sys.stderr)


if __name__ == "__main__":
    main()
