"""Drop sentence pairs that are empty, too long or too unequal in length (as Moses'
clean-corpus-n.perl does), and record which lines were kept.

    python clean_corpus.py IN_PREFIX OUT_PREFIX SRC TGT --min-len 1 --max-len 250 --ratio 1.5

reads IN_PREFIX.{SRC,TGT}, writes OUT_PREFIX.{SRC,TGT} and OUT_PREFIX.kept (the 0-based
input line number of every kept pair, one a line: select_trees.py uses it to keep the
matching gold trees). Lengths are counted in whitespace tokens.
"""

import argparse
import sys


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("in_prefix")
    p.add_argument("out_prefix")
    p.add_argument("src")
    p.add_argument("tgt")
    p.add_argument("--min-len", type=int, default=1)
    p.add_argument("--max-len", type=int, default=250)
    p.add_argument("--ratio", type=float, default=1.5, help="largest length ratio of the two sides")
    a = p.parse_args(argv)
    kept = total = 0
    with open(f"{a.in_prefix}.{a.src}", encoding="utf-8") as fs, \
            open(f"{a.in_prefix}.{a.tgt}", encoding="utf-8") as ft, \
            open(f"{a.out_prefix}.{a.src}", "w", encoding="utf-8") as os_, \
            open(f"{a.out_prefix}.{a.tgt}", "w", encoding="utf-8") as ot, \
            open(f"{a.out_prefix}.kept", "w") as ok:
        for i, (s, t) in enumerate(zip(fs, ft, strict=True) if sys.version_info >= (3, 10) else zip(fs, ft)):
            total += 1
            s, t = " ".join(s.split()), " ".join(t.split())
            ns, nt = len(s.split()), len(t.split())
            if not (a.min_len <= ns <= a.max_len and a.min_len <= nt <= a.max_len):
                continue
            if ns > a.ratio * nt or nt > a.ratio * ns:
                continue
            os_.write(s + "\n")
            ot.write(t + "\n")
            ok.write(f"{i}\n")
            kept += 1
    print(f"{a.in_prefix}: kept {kept} of {total} pairs (length {a.min_len}-{a.max_len}, ratio {a.ratio})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
