"""Generated stand-ins for the Chinese-English recipes' data (tests/end_to_end/test_recipe_zh*.py):
the project's grammar with a Chinese lexicon (mgsa_preprocess.synthetic --lang zh: raw Chinese
without spaces between words, an English-like target, gold trees, and the jieba user dictionary
that reproduces the trees' leaves), laid out as the recipes' inputs are: NIST's SGML with four
references a test set, WMT's archives and SGML/XML test sets, WIT3's IWSLT archives."""

import io
import os
import random
import tarfile
import zipfile

from mgsa_preprocess.synthetic_zh import write_corpus

DOC_SIZE = 8  # segments a document


def variant(sentences, seed):
    """Another translator's English: a word dropped or two swapped here and there."""
    rng = random.Random(seed)
    out = []
    for s in sentences:
        words = s.split()
        if len(words) > 3 and rng.random() < 0.5:
            del words[rng.randrange(len(words) - 1)]
        if len(words) > 3 and rng.random() < 0.5:
            i = rng.randrange(len(words) - 2)
            words[i], words[i + 1] = words[i + 1], words[i]
        out.append(" ".join(words))
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def write(path, lines):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    return str(path)


def docs(n):
    return [(f"XIN2003{d:04d}", list(range(d * DOC_SIZE, min(n, (d + 1) * DOC_SIZE)))) for d in range((n + DOC_SIZE - 1) // DOC_SIZE)]


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def srcset_sgml(setid, lines, lang="zh"):
    """A NIST source file: <srcset><DOC docid=...><seg id=N> (upper-case DOC, unquoted ids)."""
    out = [f'<srcset setid="{setid}" srclang="{lang}">']
    for docid, ids in docs(len(lines)):
        out.append(f'<DOC docid="{docid}" genre=nw>')
        out += [f"<seg id={j + 1}> {escape(lines[i])} </seg>" for j, i in enumerate(ids)]
        out.append("</DOC>")
    return "\n".join(out + ["</srcset>"]) + "\n"


def refset_sgml(setid, refs, reverse=()):
    """NIST's references: a <refset> per reference (sysid ref0 ...); the references in `reverse`
    list their documents in another order (matched by id, as mteval does)."""
    out = []
    for k, ref in enumerate(refs):
        out.append(f'<refset setid="{setid}" srclang="zh" trglang="en" refid="ref{k}">')
        order = docs(len(ref))
        for docid, ids in (order[::-1] if k in reverse else order):
            out.append(f'<DOC docid="{docid}" sysid="ref{k}">')
            out += [f'<seg id="{j + 1}">{escape(ref[i])}</seg>' for j, i in enumerate(ids)]
            out.append("</DOC>")
        out.append("</refset>")
    return "\n".join(out) + "\n"


def corpus(out, sizes, seed=5):
    """The grammar's Chinese corpus: {split}.zh (raw), {split}.en, {split}.zh.tree, lexicon.dict."""
    write_corpus(str(out), sizes, seed=seed, src="zh", tgt="en")
    return str(out)


def nist_layout(gen, out, sets):
    """LDC-like files from the generated corpus `gen`: train.{zh,en}, and for each (SET, split)
    of `sets` SET.src.sgm and four references (the generated English and three variants): MT02's
    in one file (four refsets, one listing its documents backwards), the others in four files.
    Returns the paths.sh text and the four references of each set."""
    lines = [f'NIST_TRAIN_ZH={gen}/train.zh', f'NIST_TRAIN_EN={gen}/train.en']
    four = {}
    for name, split in sets:
        src, tgt = read(os.path.join(gen, f"{split}.zh")), read(os.path.join(gen, f"{split}.en"))
        refs = [tgt] + [variant(tgt, k) for k in (1, 2, 3)]
        four[name] = refs
        src_file = write(os.path.join(out, f"{name}.src.sgm"), srcset_sgml(name, src).splitlines())
        if name == "MT02":
            ref_files = [write(os.path.join(out, f"{name}.ref.sgm"), refset_sgml(name, refs, reverse=(2,)).splitlines())]
        else:
            ref_files = [write(os.path.join(out, f"{name}.ref{k}.sgm"), refset_sgml(name, [r]).splitlines())
                         for k, r in enumerate(refs)]
        lines += [f"NIST_{name}_SRC={src_file}", f"NIST_{name}_REF='{' '.join(ref_files)}'"]
    return "\n".join(lines) + "\n", four


def tgz(path, files):
    """A .tgz holding {name: text}."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with tarfile.open(path, "w:gz") as t:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


def zip_file(path, files):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
