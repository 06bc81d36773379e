"""Reading a user's files for mgsa-compare: hypothesis files (one a line, or fairseq-generate's
output), and run directories as the recipes write them (results/RUN_NAME, or results/RUN_NAME/TEST
for a recipe with several test sets: the hypotheses, fairseq-generate's log; fairseq-train's
train.log beside it or in checkpoints/RUN_NAME/ beside results/).

Every problem is a CompareError: one line naming the file (and the line) and what was expected.
"""

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from mgsa_preprocess.text_files import encoding_sample, not_utf8

from .trainlog import read_text, read_train_log


class CompareError(ValueError):
    """Bad input, explained in one line (naming the file)."""


@dataclass
class Runs:
    """One system: its hypotheses for every training seed, and what its runs measured."""
    name: str
    label: str
    hyps: List[List[str]]                      # seeds x sentences
    seeds: List[str] = field(default_factory=list)  # names of the seeds (paths or numbers)
    params: Optional[int] = None
    updates_per_second: Optional[float] = None
    decode_sentences_per_second: Optional[float] = None
    valid_curve: Optional[List[Tuple[int, float]]] = None  # (updates, validation NLL in bits), first seed
    runs: List[Dict] = field(default_factory=list)  # per seed with a train.log: read_stop()'s figures

    def __post_init__(self):
        if not self.seeds:
            self.seeds = [str(i + 1) for i in range(len(self.hyps))]


# --- text files -------------------------------------------------------------------------------

def read_utf8(path: str, what: str) -> str:
    """The text of `path`, UTF-8, without a byte order mark; or one line saying where it is not."""
    if not os.path.isfile(path):
        raise CompareError(f"{path}: no such file ({what} expected)")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:  # where, so that the user can look: the line and column (one message for all)
        start = data.rfind(b"\n", 0, e.start) + 1  # of the line
        end = data.find(b"\n", e.start)
        end = len(data) if end < 0 else end  # the line's end
        raise CompareError(str(not_utf8(data[start:end], e.start - start, path, data.count(b"\n", 0, e.start) + 1,
                                        encoding_sample(data[:1 << 16], data[start:end])))) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_lines(path: str, what: str = "hypotheses") -> List[str]:
    """The lines of `path` (no line dropped; a last line without newline counts), UTF-8. Lines end
    at "\\n", "\\r\\n" or "\\r" (universal newlines) and a byte order mark at the start is not
    text: a file saved with Windows line ends or a BOM gives the lines of the plain file, and so
    the same exact matches (sacrebleu's command line, which 08_score.sh uses, likewise drops each
    line's trailing "\\r")."""
    text = read_utf8(path, what)
    # universal newlines, as open() gives them; not str.splitlines, which would also split on
    # form feeds and other separators
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# fairseq-generate writes S-, T-, H- (hypothesis), D- (detokenized hypothesis), P- (scores) lines
# per sentence, in batch order, with its own log lines between them.
FAIRSEQ_HYPOTHESIS = re.compile(r"^([HD])-(\d+)\t")


def read_fairseq_output(path: str, lines: List[str], n_refs: int, ref_path: str) -> Tuple[List[str], str]:
    """The hypotheses of fairseq-generate's output in sentence-id order: its D- lines (the
    detokenized hypotheses, which fairseq itself scores) when it has any, else its H- lines
    (what `grep ^H-` gives). Every id 0..n_refs-1 exactly once."""
    tag = "D" if any(line.startswith("D-") and FAIRSEQ_HYPOTHESIS.match(line) for line in lines) else "H"
    what = f"fairseq-generate output ({tag}- lines)"
    by_id: Dict[int, Tuple[int, str]] = {}
    for number, line in enumerate(lines, 1):
        m = FAIRSEQ_HYPOTHESIS.match(line)
        if not m or m.group(1) != tag:
            continue  # S-, T-, P- lines, the other tag, fairseq's log lines
        i = int(m.group(2))
        if i >= n_refs:
            raise CompareError(f"{path}: line {number}: {what} has sentence id {i}, but {ref_path} has {n_refs} "
                               f"lines (ids 0..{n_refs - 1} expected)")
        if i in by_id:
            raise CompareError(f"{path}: {what} has sentence id {i} twice, at lines {by_id[i][0]} and {number} "
                               f"(one hypothesis a sentence expected: --nbest 1)")
        fields = line.split("\t", 2)  # TAG-ID, score, text (empty text: no third field)
        by_id[i] = (number, fields[2] if len(fields) > 2 else "")
    for i in range(n_refs):
        if i not in by_id:
            raise CompareError(f"{path}: {what} without sentence id {i} (ids 0..{n_refs - 1} expected, one each, "
                               f"for the {n_refs} lines of {ref_path})")
    kind = "detokenized hypotheses" if tag == "D" else "hypotheses"
    return [by_id[i][1] for i in range(n_refs)], f"{path}: fairseq-generate output: its {tag}- lines ({kind}), " \
                                                   f"in sentence-id order"


def read_hyps(path: str, n_refs: int, ref_path: str) -> Tuple[List[str], Optional[str]]:
    """(hypotheses in the reference's order, a note when they were read from fairseq's output)."""
    lines = read_lines(path)
    if any(FAIRSEQ_HYPOTHESIS.match(line) for line in lines):
        return read_fairseq_output(path, lines, n_refs, ref_path)
    if len(lines) != n_refs:
        line = f"line {n_refs + 1} is one too many" if len(lines) > n_refs else f"ends at line {len(lines)}"
        raise CompareError(f"{path}: {len(lines)} lines, but the reference {ref_path} has {n_refs} "
                           f"({line}; one hypothesis a line, in the reference's order, expected)")
    return lines, None


# --- fairseq's logs ---------------------------------------------------------------------------

def read_params(train_log: str) -> Optional[int]:
    """The model's parameter count from fairseq-train's log."""
    m = re.search(r"num\. (?:shared )?model params: ([\d,]+)", read_text(train_log))
    return int(m.group(1).replace(",", "")) if m else None


def read_training_speed(train_log: str) -> Optional[float]:
    """Updates per second of wall time: the last `num_updates` and `wall` fairseq-train logged."""
    text = read_text(train_log)
    updates = re.findall(r"\bnum_updates[ =](\d+)", text)
    wall = re.findall(r"\bwall[ =]([\d.]+)", text)
    return int(updates[-1]) / float(wall[-1]) if updates and wall and float(wall[-1]) > 0 else None


def read_decoding_speed(generate_log: str) -> Optional[float]:
    """fairseq-generate's sentences/s (its 'Translated N sentences ... (X sentences/s' line)."""
    m = re.search(r"Translated [\d,]+ sentences .*?\(([\d.]+) sentences/s", read_text(generate_log))
    return float(m.group(1)) if m else None


def read_valid_curve(train_log: str) -> List[Tuple[int, float]]:
    """(num_updates, nll_loss) of every validation in a fairseq-train log (nll_loss: the
    translation loss alone; the syntactic model's tag loss is logged apart)."""
    pattern = re.compile(r"valid on 'valid' subset \| .*?\bnll_loss ([\d.]+) .*?\| num_updates (\d+)")
    return [(int(u), float(nll)) for nll, u in pattern.findall(read_text(train_log))]


def read_stop(train_log: str) -> Dict:
    """Where and why a fairseq-train run stopped, from its log (trainlog.py reads it): the last
    update, the stop ('early stop (patience)', 'max-update', 'max-epoch', 'stop-time', 'stop-min-lr',
    or 'unfinished': no "done training" after its last training line), whether its last validation
    was still its best, `capped` (a cap stopped it while improving), its best validation loss
    (and BLEU with --eval-bleu) and training minutes (fairseq's "done training in X seconds",
    summed over the resumed sessions of the log; the clock of the log's lines for a session without
    it; pauses between the lines not counted: trainlog.session_minutes)."""
    r = read_train_log(train_log)
    return {"run": os.path.dirname(os.path.abspath(train_log)), "stopped_at_update": r.stop_update, "stop": r.stop,
            "improving_at_end": r.improving_at_end, "capped": r.capped, "best_valid_loss": r.best_loss,
            "best_valid_bleu": r.best_bleu, "train_minutes": r.train_minutes}


# --- systems ----------------------------------------------------------------------------------

def mean_or_none(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def registry_label(name: str) -> str:
    """The registry's label of a system named as in fairseq_mgsa/systems.py, else the name."""
    from fairseq_mgsa import systems
    return systems.SYSTEMS[name].label if name in systems.SYSTEMS else name


def split_spec(spec: str) -> Tuple[str, List[str]]:
    """NAME=PATH[,PATH...] -> (NAME, [PATH, ...])."""
    name, sep, paths = spec.partition("=")
    if not sep or not name or not paths:
        raise CompareError(f"--system {spec!r}: NAME=PATH[,PATH...] expected (one path per training seed)")
    return name, paths.split(",")


def read_system(spec: str, n_refs: int, ref_path: str, hyp_name: str, notes: Optional[List[str]] = None) -> Runs:
    """NAME=PATH[,PATH...] -> Runs, for a test set of `n_refs` sentences whose reference(s)
    messages call `ref_path`; a directory PATH is a recipe's run directory. How a file was
    read, when it was fairseq's output, is appended to `notes`."""
    name, paths = split_spec(spec)
    hyps, params, train_speed, decode_speed, curve, stops = [], [], [], [], None, []
    for path in paths:
        if os.path.isdir(path):
            run = os.path.normpath(path)
            hyp_file = os.path.join(run, hyp_name)
            parent = os.path.dirname(run)  # results/RUN/TEST: one test set of several (the Zh-En recipes)
            logs = [os.path.join(run, "train.log"),
                    os.path.join(os.path.dirname(parent), "checkpoints", os.path.basename(run), "train.log"),
                    os.path.join(os.path.dirname(os.path.dirname(parent)), "checkpoints", os.path.basename(parent),
                                 "train.log")]
            train_log = next((p for p in logs if os.path.isfile(p)), None)
            if train_log:
                params.append(read_params(train_log))
                train_speed.append(read_training_speed(train_log))
                curve = curve or read_valid_curve(train_log)
                stops.append(read_stop(train_log))
            # fairseq-generate's speed: in its log (the recipes keep stderr in generate-test.log)
            for generate_log in (os.path.join(run, "generate-test.log"), os.path.join(run, "generate-test.txt")):
                speed = read_decoding_speed(generate_log) if os.path.isfile(generate_log) else None
                if speed:
                    decode_speed.append(speed)
                    break
        else:
            hyp_file = path
        seed_hyps, note = read_hyps(hyp_file, n_refs, ref_path)
        hyps.append(seed_hyps)
        if note and notes is not None:
            notes.append(note)
    return Runs(name, registry_label(name), hyps, seeds=paths, params=params[0] if params else None,
                updates_per_second=mean_or_none(train_speed), decode_sentences_per_second=mean_or_none(decode_speed),
                valid_curve=curve or None, runs=stops)
