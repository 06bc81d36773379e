"""--share-all-embeddings over a data directory with one dictionary per language: a one-line error
before training, naming the dictionaries, instead of fairseq's traceback.

A Chinese source with an English target is preprocessed with separate dictionaries (mgsa-preprocess
without --joined-dictionary, separate BPE codes: the two scripts share no subwords), and one
embedding matrix for both sides is then impossible. The plugin's models and the mgsa_translation
task check it where the model is built; fairseq's own Transformer under fairseq's `translation`
task raises its own ValueError, which the plugin's exception hook (excepthook.py) prints as the same
one line.
"""

import os

from ..errors import MGSAError

# what fairseq's TransformerModelBase.build_model raises for the same mistake
FAIRSEQ_MESSAGE = "--share-all-embeddings requires a joined dictionary"
ADVICE = ("train without --share-all-embeddings (--share-decoder-input-output-embed shares the target side's "
          "embeddings only), or preprocess with --joined-dictionary where source and target share their subwords")


def message(detail: str = "") -> str:
    detail = detail or "the data directory has one per language"
    return (f"--share-all-embeddings needs one dictionary for both languages, but {detail} (written without "
            f"--joined-dictionary, as for a Chinese source and an English target): {ADVICE}")


def _option(cfg, name):
    try:
        return getattr(cfg, name, None)
    except Exception:  # an omegaconf DictConfig in struct mode raises for a key it does not hold
        return None


def check(cfg, src_dict, tgt_dict, data=None, src=None, tgt=None):
    """MGSAError when `cfg` asks for --share-all-embeddings and the two dictionaries differ."""
    if not _option(cfg, "share_all_embeddings") or src_dict is None or tgt_dict is None or src_dict == tgt_dict:
        return
    if data and src and tgt:
        folder = str(data).split(os.pathsep)[0]
        detail = (f"{os.path.join(folder, f'dict.{src}.txt')} ({len(src_dict)} types) and "
                  f"{os.path.join(folder, f'dict.{tgt}.txt')} ({len(tgt_dict)} types) differ")
    else:
        detail = f"the source dictionary ({len(src_dict)} types) and the target's ({len(tgt_dict)} types) differ"
    raise MGSAError(message(detail))


def check_task(cfg, task):
    """`check` with a translation task's dictionaries and data directory."""
    tcfg = getattr(task, "cfg", None)
    check(cfg, getattr(task, "source_dictionary", None), getattr(task, "target_dictionary", None),
          _option(tcfg, "data"), _option(tcfg, "source_lang"), _option(tcfg, "target_lang"))
