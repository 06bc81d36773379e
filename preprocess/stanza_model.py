"""The model directory `mgsa-train-parser` writes, and loading it offline as a stanza pipeline.

Layout (every file stanza's own; `mgsa_parser.json` is the project's record):

    DIR/mgsa_parser.json   language, file names, training settings, dev scores, times
    DIR/pretrain.pt        word vectors (stanza.models.common.pretrain.Pretrain)
    DIR/pos.pt             POS tagger (stanza.models.tagger), predicts the treebank's tags as XPOS
    DIR/constituency.pt    constituency parser (stanza.models.constituency_parser), reads XPOS
    DIR/resources.json     "{}": stanza.Pipeline reads a resources file even when every
                           model path is given and nothing is downloaded

`mgsa-preprocess --stanza-dir DIR` and `fairseq-interactive --stanza-dir DIR` load such a
directory (recognised by its `mgsa_parser.json`) with `download_method=None`: nothing is
fetched, and a missing file is a one-line error naming it. mgsa-train-parser builds a new model
in DIR/partial/ and moves it into DIR only once it is complete, its record last; the record lists
the files the run made (`made`), and the next run replaces those and no other file of DIR
(check_out_dir: DIR must be new, empty or such a directory, and hold no input).
"""

import json
import os
import shutil
from typing import Optional

from .errors import PreprocessError

RECORD = "mgsa_parser.json"
FILES = {"pretrain": "pretrain.pt", "pos": "pos.pt", "constituency": "constituency.pt", "resources": "resources.json"}
PARTIAL = "partial"  # DIR/partial/: a model being trained, moved into DIR once complete (install_model)
STAGING_MARK = ".mgsa-train-parser-staging"  # in DIR/partial/: the folder is this command's
TRAINING = "training"  # DIR/training/: the trainer's working copies of the treebanks, its epoch log
# what training/ held before the record listed the files it made (made_files)
TRAINING_FILES = ("train.mrg", "dev.mrg", "train.conllu", "dev.conllu", "dev.pred.conllu", "parser_epochs.jsonl")


def is_model_dir(path: Optional[str]) -> bool:
    return bool(path) and os.path.isfile(os.path.join(path, RECORD))


def model_files(model_dir: str) -> dict:
    return {k: os.path.join(model_dir, f) for k, f in FILES.items()}


def read_record(model_dir: str) -> dict:
    path = os.path.join(model_dir, RECORD)
    try:
        with open(path) as f:
            record = json.load(f)
    except FileNotFoundError:
        raise PreprocessError(f"not a parser directory written by mgsa-train-parser (no {RECORD})", model_dir) from None
    except (OSError, ValueError) as e:
        raise PreprocessError(f"unreadable parser record: {e}", path) from None
    if not isinstance(record, dict) or "lang" not in record:
        raise PreprocessError("parser record without a 'lang' entry", path)
    return record


def write_record(model_dir: str, record: dict) -> None:
    with open(os.path.join(model_dir, RECORD), "w") as f:
        json.dump(record, f, indent=2)
    with open(model_files(model_dir)["resources"], "w") as f:
        f.write("{}\n")


def made_files(record: dict) -> list:
    """The files (paths relative to the directory) that mgsa-train-parser made in a model directory:
    the record's list; for a record written before the list was kept, the layout those runs wrote."""
    made = record.get("made")
    if made is None:
        made = [RECORD] + list(FILES.values()) + [f"{TRAINING}/{name}" for name in TRAINING_FILES]
    return list(made)


def _is_staging(path: str, legacy: bool) -> bool:
    """OUT/partial/ is this command's when it carries the mark (or OUT's record predates the mark,
    whose runs always made and emptied it)."""
    return os.path.isfile(os.path.join(path, STAGING_MARK)) or legacy


def check_out_dir(out: str, inputs: dict) -> list:
    """Refuse an --out that could hold the user's files, before anything is written: it must be new,
    empty (or hold only a staging folder a stopped run left), or a model directory this command
    wrote (its record lists what it made: only those files are ever replaced), and hold none of the
    input files (`inputs`: {option: path}). Returns the files the new model replaces."""
    real = os.path.realpath(out)
    for option, path in inputs.items():
        if path and os.path.commonpath([real, os.path.dirname(os.path.realpath(path))]) == real:
            raise PreprocessError(f"--out {out} holds the input {path} ({option}): the model directory is rewritten "
                                  f"by every run; give --out a folder of its own (a new one, e.g. parser/)")
    if not os.path.exists(out):
        return []
    if not os.path.isdir(out):
        raise PreprocessError("--out must name a directory (the model's), but this is a file", out)
    model = is_model_dir(out)
    made = made_files(read_record(out)) if model else []
    legacy = _legacy(out)
    staging = os.path.join(out, PARTIAL)
    if os.path.lexists(staging) and not (os.path.isdir(staging) and _is_staging(staging, legacy)):
        raise PreprocessError(f"--out holds a {PARTIAL}/ that mgsa-train-parser did not make (it builds the new model "
                              f"there): move it away, or give --out a new folder", out)
    if not model:
        others = sorted(set(os.listdir(out)) - {PARTIAL})
        if others:
            shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
            raise PreprocessError(f"--out holds files that mgsa-train-parser did not write ({shown}): give a new or "
                                  f"empty folder, or a parser directory this command wrote (one with {RECORD})", out)
    return made


def _legacy(out: str) -> bool:
    return is_model_dir(out) and "made" not in read_record(out)


def staging_dir(out: str) -> str:
    """OUT/partial/, made afresh and marked as this command's: where the new model is built (OUT's
    old model, if any, stays as it is). An unmarked partial/ is not removed (check_out_dir refused it)."""
    new = os.path.join(out, PARTIAL)
    legacy = _legacy(out)
    try:
        os.makedirs(out, exist_ok=True)
        if os.path.isdir(new) and _is_staging(new, legacy):
            shutil.rmtree(new)  # what an earlier stopped run left
        os.makedirs(os.path.join(new, TRAINING))
        with open(os.path.join(new, STAGING_MARK), "w") as f:
            f.write("mgsa-train-parser builds its new model here, and moves it into the folder above once complete\n")
    except OSError as e:
        raise PreprocessError(f"cannot create the model directory: {e.strerror}", out) from None
    return new


def _files_under(top: str) -> list:
    return sorted(os.path.relpath(os.path.join(d, name), top) for d, _, names in os.walk(top) for name in names)


def install_model(new: str, out: str, record: dict, replaces: list) -> None:
    """The complete model of `new` into `out`, replacing the files of the old one (`replaces`, its
    record's list): the old record first (a directory without it is no model), then the old
    files, then the new files, then the new record, which lists them (`made`). No other file of
    `out` is touched; a new file that would overwrite one the old model did not make stops this
    before anything is replaced."""
    write_record(new, record)
    record["made"] = [p for p in _files_under(new) if p != STAGING_MARK]
    write_record(new, record)
    old = set(replaces)
    for rel in record["made"]:
        target = os.path.join(out, rel)
        if os.path.lexists(target) and (rel not in old or os.path.isdir(target) and not os.path.islink(target)):
            raise PreprocessError(f"the new model is complete in {new}, but {rel} in the model directory is not a file "
                                  f"of the old model: move it away and run the command again", target)
    if os.path.lexists(os.path.join(out, RECORD)):
        os.remove(os.path.join(out, RECORD))
    for rel in sorted(old - {RECORD}):
        target = os.path.join(out, rel)
        if os.path.isfile(target) or os.path.islink(target):
            os.remove(target)
    for folder in sorted({os.path.dirname(rel) for rel in old if os.path.dirname(rel)}, key=len, reverse=True):
        try:
            os.rmdir(os.path.join(out, folder))  # only if the old model's files were all it held
        except OSError:
            pass
    for rel in record["made"]:
        if rel != RECORD:
            os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
            os.replace(os.path.join(new, rel), os.path.join(out, rel))
    os.replace(os.path.join(new, RECORD), os.path.join(out, RECORD))
    shutil.rmtree(new)  # the mark and the emptied folders


def load_pipeline(model_dir: str, processors: str = "tokenize,pos,constituency", use_gpu: bool = False,
                  batch_size: int = 256, foundation_cache=None):
    """stanza.Pipeline over pretokenized input from a directory of mgsa-train-parser, offline."""
    import stanza

    record = read_record(model_dir)
    files = model_files(model_dir)
    needed = ["resources", "pretrain", "pos"] + (["constituency"] if "constituency" in processors else [])
    for key in needed:
        if not os.path.isfile(files[key]):
            raise PreprocessError(f"{FILES[key]} is missing from the parser directory (rerun mgsa-train-parser)",
                                  files[key])
    kwargs = dict(processors=processors, tokenize_pretokenized=True, use_gpu=use_gpu, dir=model_dir,
                  download_method=None, allow_unknown_language=True, logging_level="WARN",
                  pos_model_path=files["pos"], pos_pretrain_path=files["pretrain"], pos_batch_size=batch_size)
    if "constituency" in processors:
        kwargs.update(constituency_model_path=files["constituency"], constituency_pretrain_path=files["pretrain"],
                      constituency_batch_size=batch_size)
    if foundation_cache is not None:
        kwargs["foundation_cache"] = foundation_cache
    try:
        return stanza.Pipeline(record["lang"], **kwargs)
    except Exception as e:  # a truncated or foreign model file ends here
        raise PreprocessError(f"cannot load the parser in this directory: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}", model_dir) from None
