"""fairseq-preprocess's own options under ``mgsa-preprocess``.

Every option that names a file or changes which files exist is either carried
through (BPE included) or refused here, in one line, before any work: fairseq
itself would only assert after the phrases were written, or skip a file quietly.
``fairseq_args`` is what fairseq-preprocess is then handed.
"""

import copy
import os

from .errors import PreprocessError
from .phrase_files import tag_dictionary_path


def dict_path(destdir: str, lang: str) -> str:
    return os.path.join(destdir, f"dict.{lang}.txt")  # fairseq_cli.preprocess._dict_path's name


def check(args):
    """Refuse combinations fairseq-preprocess cannot carry out (one line, before any work)."""
    if not args.target_lang and not args.only_source:
        raise PreprocessError("--target-lang is required (or --only-source)")
    if args.only_source:
        for option, value in (("--tgtdict", args.tgtdict), ("--tgt-bpe-codes", args.tgt_bpe_codes),
                              ("--align-suffix", args.align_suffix), ("--alignfile", args.alignfile),
                              ("--joined-dictionary", args.joined_dictionary)):
            if value:
                raise PreprocessError(f"{option} needs the target side: it cannot be used with --only-source")
    if args.joined_dictionary and args.srcdict and args.tgtdict:
        raise PreprocessError("--joined-dictionary uses one dictionary for both sides: give --srcdict or --tgtdict, "
                              "not both")
    if not args.trainpref:
        if args.dict_only:
            raise PreprocessError("--dict-only builds the dictionaries from --trainpref: give --trainpref")
        if args.alignfile:
            raise PreprocessError("--alignfile aligns the training text: it needs --trainpref")
        if args.joined_dictionary:
            if not (args.srcdict or args.tgtdict):
                raise PreprocessError("without --trainpref there is no text to build the joined dictionary from: "
                                      "pass --srcdict")
        else:
            if not args.srcdict:
                raise PreprocessError("without --trainpref there is no text to build the source dictionary from: "
                                      "pass --srcdict")
            if not args.only_source and not args.tgtdict:
                raise PreprocessError("without --trainpref there is no text to build the target dictionary from: "
                                      "pass --tgtdict")
    if not args.trainpref and not args.tagdict:
        raise PreprocessError("without --trainpref there is no split to build the tag dictionary from: pass --tagdict")


def check_existing_dictionaries(args):
    """fairseq-preprocess refuses to rebuild a dictionary in --destdir: say so, and what to pass, before any work."""
    src, tgt, dest = args.source_lang, args.target_lang, args.destdir
    one_given = args.srcdict or args.tgtdict
    wanted = [("--srcdict", dict_path(dest, src), args.srcdict or (args.joined_dictionary and one_given))]
    if not args.only_source:
        wanted.append(("--tgtdict", dict_path(dest, tgt), args.tgtdict or (args.joined_dictionary and one_given)))
    wanted.append(("--tagdict", tag_dictionary_path(dest, src), args.tagdict))
    present = [(option, path) for option, path, given in wanted if not given and os.path.exists(path)]
    if not present:
        return
    if args.joined_dictionary:  # one dictionary for both sides: fairseq takes it once
        present = [p for p in present if p[0] != "--tgtdict"] or [("--srcdict", present[0][1])]
    flags = " ".join(f"{option} {path}" for option, path in present)
    raise PreprocessError(f"already exists and would be rebuilt: to binarize with the dictionaries already in "
                          f"{dest} (from --dict-only or an earlier run) add {flags}; else use a fresh --destdir",
                          present[0][1])


def check_workdir(args, splits, workdir: str):
    """With --bpe-codes, the segmented text must not be written over an input file (--workdir beside the data)."""
    src, tgt = args.source_lang, args.target_lang
    langs = [src] if args.only_source else [src, tgt]
    inputs = {os.path.realpath(f"{pref}.{lang}") for _, pref in splits for lang in langs}
    suffix = (args.align_suffix,) if args.align_suffix else ()
    if args.trees_suffix:
        inputs |= {os.path.realpath(f"{pref}.{src}.{args.trees_suffix.lstrip('.')}") for _, pref in splits}
    inputs |= {os.path.realpath(f"{pref}.{s}") for _, pref in splits for s in suffix}
    for name, _ in splits:
        for ext in langs + list(suffix):
            out = os.path.join(workdir, f"{name}.{ext}")
            if os.path.realpath(out) in inputs:
                raise PreprocessError(f"the segmented text would be written over this input file: give --workdir "
                                      f"another folder (now {workdir})", out)


def fairseq_args(args, seg_prefix: dict, alignfile):
    """The arguments fairseq-preprocess runs with: the segmented prefixes with --bpe-codes, no --align-suffix."""
    fargs = copy.copy(args)
    if args.bpe_codes:
        for key, prefix_name in (("trainpref", "train"), ("validpref", "valid"), ("testpref", "test")):
            names = [n for n in seg_prefix if n.rstrip("0123456789") == prefix_name]
            if getattr(args, key) and names:
                setattr(fargs, key, ",".join(seg_prefix[n] for n in names))
    # Alignments are binarized per split by word_alignments.binarize (fairseq's loop skips valid1, test1, ...).
    fargs.align_suffix = None
    fargs.alignfile = alignfile
    if args.joined_dictionary and (args.srcdict or args.tgtdict):
        # fairseq refuses an existing dict.{tgt}.txt unless --tgtdict is given, and refuses --tgtdict next to
        # --srcdict with --joined-dictionary; loading the one dictionary for both sides is what it means.
        fargs.joined_dictionary = False
        fargs.srcdict = fargs.tgtdict = args.srcdict or args.tgtdict
    if args.dict_only:
        fargs.validpref = fargs.testpref = None
    return fargs
