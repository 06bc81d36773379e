"""The preprocessing report: what was read, written, normalised, repaired."""

import json
from collections import Counter
from typing import Dict, List

from .phrase_files import report_path

MAX_EXAMPLES = 20  # repaired sentences listed by file:line per split


class SplitReport:
    """Totals for one split, merged from the per-chunk statistics of the workers."""

    def __init__(self, name: str, levels: int, source: str, trees: str):
        self.name, self.levels, self.source, self.trees = name, levels, source, trees
        self.sentences = 0
        self.words = 0
        self.subwords = 0
        self.phrases = [0] * levels
        self.tag_counts: Counter = Counter()  # over all levels
        self.normalisation: Counter = Counter()
        self.repaired: Counter = Counter()  # reason -> sentences (--lenient)
        self.repaired_examples: List[str] = []
        self.unseen_tags: Counter = Counter()  # valid/test phrases whose tag is not in the train dictionary

    def add_chunk(self, stats: dict):
        self.sentences += stats["sentences"]
        self.words += stats["words"]
        self.subwords += stats["subwords"]
        for k, m in enumerate(stats["phrases"]):
            self.phrases[k] += m
        self.normalisation.update(stats["normalisation"])
        self.repaired.update(stats["repaired"])
        room = MAX_EXAMPLES - len(self.repaired_examples)
        self.repaired_examples.extend(stats["repaired_examples"][:max(room, 0)])

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "trees": self.trees,
            "sentences": self.sentences,
            "words": self.words,
            "subwords": self.subwords,
            "levels": [
                {"level": k + 1, "phrases": m,
                 "mean_phrase_words": round(self.words / m, 4) if m else 0.0,
                 "mean_phrase_subwords": round(self.subwords / m, 4) if m else 0.0}
                for k, m in enumerate(self.phrases)
            ],
            "tag_counts": dict(self.tag_counts.most_common()),
            "normalisation": dict(sorted(self.normalisation.items())),
            "repaired": dict(sorted(self.repaired.items())),
            "repaired_examples": self.repaired_examples,
            "unseen_tags": dict(self.unseen_tags.most_common()),
        }


def format_text(report: Dict) -> str:
    """A human-readable rendering of the JSON report."""
    out = [f"mgsa-preprocess report: {report['destdir']}",
           f"levels: {report['levels']}   tag dictionary: {report['tag_dictionary']} ({report['tags']} tags)"]
    for name, s in report["splits"].items():
        out.append("")
        out.append(f"[{name}] {s['sentences']} sentences, {s['words']} words, {s['subwords']} subwords")
        out.append(f"  source {s['source']}")
        out.append(f"  trees  {s['trees']}")
        for lv in s["levels"]:
            out.append(f"  level {lv['level']}: {lv['phrases']} phrases, mean length "
                       f"{lv['mean_phrase_words']:.2f} words / {lv['mean_phrase_subwords']:.2f} subwords")
        tags = ", ".join(f"{t} {c}" for t, c in list(s["tag_counts"].items())[:15])
        more = len(s["tag_counts"]) - 15
        out.append(f"  tags: {tags}" + (f", ... ({more} more)" if more > 0 else ""))
        norm = ", ".join(f"{k} {v}" for k, v in s["normalisation"].items() if v)
        out.append(f"  normalised: {norm or 'nothing'}")
        if s["repaired"]:
            out.append("  REPAIRED (flat partition, --lenient): "
                       + ", ".join(f"{k} {v}" for k, v in s["repaired"].items()))
            out.extend(f"    {e}" for e in s["repaired_examples"])
        else:
            out.append("  repaired: none")
        if s["unseen_tags"]:
            out.append("  tags not in the train dictionary (written as <unk>): "
                       + ", ".join(f"{t} {c}" for t, c in s["unseen_tags"].items()))
    alignments = report.get("alignments") or {}
    for name, a in alignments.get("files", {}).items():
        mapped = "" if a["subword_links"] is None else f" -> {a['subword_links']} subword links"
        out.append(f"alignments [{name}] {a['file']}: {a['lines']} lines, {a['word_links']} links{mapped}"
                   + (f" -> {a['output']}" if a.get("output") else ""))
    for name in alignments.get("missing", []):
        out.append(f"alignments [{name}]: no file, none written")
    return "\n".join(out) + "\n"


def write_report(report: Dict, destdir: str) -> str:
    """Write ``mgsa_preprocess_report.{json,txt}`` and return the text form."""
    text = format_text(report)
    with open(report_path(destdir), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    with open(report_path(destdir, text=True), "w") as f:
        f.write(text)
    return text
