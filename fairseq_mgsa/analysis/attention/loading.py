"""The checkpoints of mgsa-attention, each with its own task (fairseq's checkpoint_utils), so that
sentences reach a model as in fairseq-generate / fairseq-interactive.

Everything a user can get wrong is checked before any model is built, each a one-line
MGSAError: DATA is a binarized data directory (its dict.*.txt), every --path a file fairseq-train
saved, and every checkpoint's embedding tables have the sizes of DATA's dictionaries (a
checkpoint trained on other data would fail in load_state_dict with a size-mismatch traceback).
"""

import os
from typing import List, Tuple

from fairseq import checkpoint_utils, tasks
from fairseq.data import data_utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from mgsa_preprocess.phrase_files import is_tag_dictionary

from ... import checkpoint_loading  # noqa: F401  (torch.load allow-list for fairseq checkpoints)
from ...errors import MGSAError

# The first bytes of what torch.save writes: a zip archive (torch >= 1.6) or a legacy pickle
# (protocol 2+). Anything else (a text file, a gzip) is refused before torch.load reads it.
TORCH_MAGIC = (b"PK\x03\x04", b"\x80")


def dictionaries(data: str) -> List[str]:
    """The token dictionaries of a data directory (not MG-SA's phrase-tag dictionary)."""
    return sorted(f for f in os.listdir(data) if f.startswith("dict.") and f.endswith(".txt")
                  and not is_tag_dictionary(f))


def check_data_dir(data: str) -> None:
    if not os.path.isdir(data):
        raise MGSAError(f"data directory {data} not found")
    if not dictionaries(data):
        raise MGSAError(f"{data} holds no dictionary (dict.SRC.txt, dict.TGT.txt): DATA must be the binarized "
                        f"directory the checkpoints were trained on (the --destdir of mgsa-preprocess or "
                        f"fairseq-preprocess), not raw text")


def overrides(args) -> dict:
    out = {"data": args.data, "source_input": args.source_input}
    for key in ("stanza_dir", "source_lang", "target_lang"):
        if getattr(args, key):
            out[key] = getattr(args, key)
    return out


def read_checkpoint(path: str, args) -> dict:
    """The state of a fairseq checkpoint (fairseq's own reader), or an error naming the file."""
    if not os.path.isfile(path):
        raise MGSAError(f"checkpoint {path} not found (--path)")
    expected = "expected a checkpoint fairseq-train saved (checkpoint_best.pt, checkpoint_last.pt)"
    with open(path, "rb") as f:
        head = f.read(4)
    if not head.startswith(TORCH_MAGIC):
        raise MGSAError(f"{path} is not a fairseq checkpoint (--path): not a file torch.save wrote; {expected}")
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(path, overrides(args))
    except Exception as e:  # torch.load and fairseq's upgrade of old states fail in many ways on other files
        reason = (str(e).strip().splitlines() or [""])[0][:100]
        raise MGSAError(f"{path} is not a fairseq checkpoint (--path): fairseq cannot read it "
                        f"({type(e).__name__}: {reason}); {expected}")
    if not isinstance(state, dict) or "model" not in state or (state.get("cfg") is None
                                                                and state.get("args") is None):
        raise MGSAError(f"{path} is not a fairseq checkpoint (--path): no model weights with their configuration; "
                        f"{expected}")
    return state


def language_pair(cfg, data: str, path: str) -> Tuple[str, str]:
    src, tgt = cfg.task.source_lang, cfg.task.target_lang
    if src is None or tgt is None:  # as fairseq's translation task does
        src, tgt = data_utils.infer_language_pair(data)
    if src is None or tgt is None:
        raise MGSAError(f"{data}: cannot tell the language pair of {path} (no files named like "
                        f"train.SRC-TGT.SRC.bin): give -s SRC -t TGT")
    for lang in (src, tgt):
        if not os.path.isfile(os.path.join(data, f"dict.{lang}.txt")):
            raise MGSAError(f"{os.path.join(data, f'dict.{lang}.txt')} not found: {path} translates {src} -> {tgt}; "
                            f"DATA must be the binarized directory it was trained on (else give -s SRC -t TGT)")
    return src, tgt


def setup(paths: List[str], args) -> list:
    """(state, cfg, task) of every checkpoint, all checked against DATA before any model is built."""
    checked = []
    for path in paths:
        state = read_checkpoint(path, args)
        cfg = convert_namespace_to_omegaconf(state["args"]) if state.get("args") is not None else state["cfg"]
        src, tgt = language_pair(cfg, args.data, path)
        task = tasks.setup_task(cfg.task, from_checkpoint=True)
        checked.append((state, cfg, task, dictionary_sizes(state, task, args.data, src, tgt)))
    for path, (_, _, _, sizes) in zip(paths, checked):
        wrong = [s for s in sizes if s[1] is not None and s[1] != s[2]]
        if wrong:
            differ = "; ".join(f"{side} {ckpt} symbols in the checkpoint, {data} in {file}"
                               for side, ckpt, data, file in wrong)
            others = [f"--path {p} fits" for p, (*_, s) in zip(paths, checked)
                      if p != path and all(c is None or c == d for _, c, d, _ in s)]
            raise MGSAError(f"{path} was not trained on {args.data}'s dictionaries: {differ}"
                            + (f" ({others[0]})" if others else "") + ": DATA must be the data directory the "
                            f"checkpoints were trained on; two side by side must share it")
    return [(state, cfg, task) for state, cfg, task, _ in checked]


def dictionary_sizes(state, task, data: str, src: str, tgt: str) -> list:
    """(side, rows of the checkpoint's embedding table or None, symbols of DATA's dictionary, file)."""
    out = []
    for side, key, dictionary, lang in (("source", "encoder.embed_tokens.weight", task.source_dictionary, src),
                                        ("target", "decoder.embed_tokens.weight", task.target_dictionary, tgt)):
        weight = state["model"].get(key)
        out.append((side, None if weight is None else weight.size(0), len(dictionary),
                    os.path.join(data, f"dict.{lang}.txt")))
    return out


def load(path: str, state: dict, task, args):
    """The model of a checked checkpoint, eval mode, and its label for the figures."""
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides(args),
                                                                      task=task, state=state)
    model = models[0].eval()
    arch = getattr(cfg.model, "arch", None) or getattr(cfg.model, "_name", "model")
    label = f"{arch} ({os.path.basename(os.path.dirname(os.path.abspath(path))) or path})"
    return model, cfg, task, label
