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
in DIR/partial/ and moves it into DIR only once it is complete, its record last.
"""

import json
import os
import shutil
from typing import Optional

from .errors import PreprocessError

RECORD = "mgsa_parser.json"
FILES = {"pretrain": "pretrain.pt", "pos": "pos.pt", "constituency": "constituency.pt", "resources": "resources.json"}
PARTIAL = "partial"  # DIR/partial/: a model being trained, moved into DIR once complete (install_model)


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


def staging_dir(out: str) -> str:
    """OUT/partial/, emptied: where the new model is built (OUT's old model, if any, stays as it is)."""
    try:
        os.makedirs(out, exist_ok=True)
        new = os.path.join(out, PARTIAL)
        shutil.rmtree(new, ignore_errors=True)  # what an earlier failed run left
        os.makedirs(os.path.join(new, "training"))
    except OSError as e:
        raise PreprocessError(f"cannot create the model directory: {e.strerror}", out) from None
    return new


def install_model(new: str, out: str) -> None:
    """The complete model of `new` into `out`, replacing the old one: the old record first (a
    directory without it is no model), then the files, then the new record."""
    record = os.path.join(out, RECORD)
    if os.path.exists(record):
        os.remove(record)
    for name in list(FILES.values()) + ["training"]:
        target = os.path.join(out, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        os.replace(os.path.join(new, name), target)
    os.replace(os.path.join(new, RECORD), record)
    os.rmdir(new)


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
