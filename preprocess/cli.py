"""``mgsa-preprocess``: fairseq-preprocess plus the MG-SA phrase files, in one command.

Steps: (BPE with ``--bpe-codes``) -> trees (``--trees-suffix`` files, or
``--parser stanza``, optionally sharded) -> phrase files for every split, checked
against the trees and the text -> fairseq-preprocess itself, in process, with
all its options -> check that the phrase spans cover exactly fairseq's tokens ->
tag dictionary and report. Phrase files are only put in place once everything
has passed, so a failed run never leaves phrase files that look complete.
"""

import logging
import os
import shutil
import sys
import tempfile

from .errors import PreprocessError
from .phrase_files import TAG_SYMBOLS, phrase_prefix, report_path, tag_dictionary_path
from .progress import end_line

DESCRIPTION = ("Binarize a parallel corpus for fairseq (all fairseq-preprocess options apply) and write, for the "
               "source, the top-K syntactic phrase partitions of every sentence as phrase files "
               f"{phrase_prefix('{destdir}/{split}.{src}-{tgt}.{src}', '{k}')}.bin/.idx, the tag dictionary "
               f"{tag_dictionary_path('{destdir}', '{src}')} and a report {report_path('{destdir}')} (and .txt).")


def get_parser():
    from .fairseq_import import import_fairseq

    import_fairseq()
    from fairseq import options

    from .align import STYLES

    parser = options.get_preprocessing_parser()
    parser.prog = "mgsa-preprocess"
    parser.description = DESCRIPTION
    g = parser.add_argument_group("MG-SA phrases (mgsa-preprocess)")
    source = g.add_mutually_exclusive_group()
    source.add_argument("--trees-suffix", metavar="SUFFIX",
                        help="read the source's trees from {pref}.{src}.SUFFIX: bracketed (Penn Treebank) trees, "
                             "one per source line, a tree may span several lines")
    source.add_argument("--parser", choices=["stanza"],
                        help="parse the source with stanza (pretokenized, batched, on GPU when there is one); "
                             "trees are kept in {destdir}/trees/")
    g.add_argument("--levels", type=int, default=3, metavar="K", help="phrase levels: the top K of the tree (default: 3)")
    g.add_argument("--subword-style", choices=STYLES, default="bpe",
                   help="how the (already segmented) source marks word boundaries: bpe = subword-nmt "
                        "continuation separator (see --bpe-separator), sentencepiece = U+2581 word starts, "
                        "none = every token is a word")
    g.add_argument("--bpe-separator", default="@@", metavar="SEP", help="subword-nmt continuation separator (default: @@)")
    g.add_argument("--bpe-codes", metavar="CODES",
                   help="apply these subword-nmt codes to the source and target text (word-level input), "
                        "into --workdir, and binarize that")
    g.add_argument("--tgt-bpe-codes", metavar="CODES", help="separate codes for the target (default: --bpe-codes)")
    g.add_argument("--workdir", metavar="DIR", help="where segmented text goes (default: {destdir}/bpe)")
    g.add_argument("--tagdict", metavar="FP", help="reuse this tag dictionary instead of building one from train")
    g.add_argument("--lenient", action="store_true",
                   help="replace a bad tree (malformed, leaves differ from the words) or an empty line by a flat "
                        "partition (one phrase per word, tag <unk>), counted in the report, instead of stopping. "
                        "Count mismatches and unbalanced brackets still stop the run")
    g.add_argument("--num-shards", type=int, default=1, metavar="N",
                   help="with --parser: the parsing is split into N shards; with --shard-id only that shard is "
                        "parsed, without it the N shards are merged and the data binarized")
    g.add_argument("--shard-id", type=int, metavar="I", help="parse shard I (0-based) of --num-shards and stop")
    g.add_argument("--parser-lang", metavar="LANG", help="stanza language (default: --source-lang)")
    g.add_argument("--parser-device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="auto = GPU when torch sees one")
    g.add_argument("--parser-batch-size", type=int, default=256, metavar="N",
                   help="sentences per stanza batch (pos and constituency; default: 256)")
    g.add_argument("--stanza-dir", metavar="DIR", help="stanza model directory (default: stanza's own)")
    g.add_argument("--stanza-download", choices=["none", "reuse", "download"], default="reuse",
                   help="stanza download_method: none = never, reuse = fetch only missing models (default), "
                        "download = refresh the resource list")
    return parser


def _check_args(args):
    if not args.trees_suffix and not args.parser:
        raise PreprocessError("give the source's trees: --trees-suffix SUFFIX (tree files) or --parser stanza")
    if not args.source_lang:
        raise PreprocessError("--source-lang is required")
    if not (args.trainpref or args.validpref or args.testpref):
        raise PreprocessError("nothing to do: give --trainpref, --validpref and/or --testpref")
    if args.levels < 1:
        raise PreprocessError(f"--levels must be at least 1 (got {args.levels})")
    if args.num_shards < 1:
        raise PreprocessError(f"--num-shards must be at least 1 (got {args.num_shards})")
    if (args.shard_id is not None or args.num_shards > 1) and not args.parser:
        raise PreprocessError("--num-shards/--shard-id split the parsing: they need --parser")
    if args.shard_id is not None and not 0 <= args.shard_id < args.num_shards:
        raise PreprocessError(f"--shard-id must be in [0, {args.num_shards}) (got {args.shard_id})")
    if args.dataset_impl != "mmap":
        raise PreprocessError(f"mgsa-preprocess writes mmap datasets only (got --dataset-impl {args.dataset_impl})")
    if args.bpe_codes and args.subword_style != "bpe":
        raise PreprocessError("--bpe-codes writes subword-nmt segmentation: leave --subword-style at bpe")
    if args.tgt_bpe_codes and not args.bpe_codes:
        raise PreprocessError("--tgt-bpe-codes needs --bpe-codes")
    if args.parser_batch_size < 1:
        raise PreprocessError("--parser-batch-size must be positive")


def _splits(args):
    """``(output split name, input prefix)`` in fairseq's naming: train, valid, valid1, ..., test, test1, ..."""
    out = []
    if args.trainpref:
        out.append(("train", args.trainpref))
    for key, name in (("validpref", "valid"), ("testpref", "test")):
        if getattr(args, key):
            for k, pref in enumerate(getattr(args, key).split(",")):
                out.append((f"{name}{k}" if k else name, pref))
    return out


def _need_file(path, what):
    if not os.path.isfile(path):
        raise PreprocessError(f"{what} not found", path)


def _make_parser(args):
    from .parse import StanzaParser

    parser = StanzaParser(args.parser_lang or args.source_lang, device=args.parser_device,
                          download=args.stanza_download, model_dir=args.stanza_dir, batch_size=args.parser_batch_size)
    for warning in parser.warnings:  # from the parser's training (mgsa-train-parser's record)
        print(f"mgsa-preprocess: warning: the parser in {args.stanza_dir}: {warning}", file=sys.stderr, flush=True)
    return parser


def _alignment_files(args, splits):
    """``--align-suffix``: ``({split: alignment file}, [splits without one])``; an error if no split has one.

    fairseq binarizes the files it finds and passes over the others without a word;
    here the splits without one are printed and listed in the report.
    """
    if not args.align_suffix or args.dict_only:  # fairseq's --dict-only writes no alignments either
        return {}, []
    found, missing = {}, []
    for name, pref in splits:
        path = f"{pref}.{args.align_suffix}"
        if os.path.isfile(path):
            found[name] = path
        else:
            missing.append(name)
    if not found:
        looked = ", ".join(f"{pref}.{args.align_suffix}" for _, pref in splits)
        raise PreprocessError(f"--align-suffix {args.align_suffix}: no alignment file for any split (looked for "
                              f"{looked})")
    return found, missing


def run(args) -> dict:
    """Everything ``mgsa-preprocess`` does; returns the report (or the shard or --dict-only summary)."""
    # fairseq is imported here, not at module level, so that importing the CLI stays cheap
    from fairseq_cli import preprocess as fairseq_preprocess

    from . import fairseq_options, parse, word_alignments
    from .bpe import apply_bpe
    from .inputs import check_inputs

    _check_args(args)
    fairseq_options.check(args)
    src, tgt = args.source_lang, args.target_lang
    target = not args.only_source
    # --dict-only: the dictionaries come from train alone (fairseq's too)
    splits = [s for s in _splits(args) if s[0] == "train"] if args.dict_only else _splits(args)
    progress = not args.no_progress_bar
    for name, pref in splits:
        _need_file(f"{pref}.{src}", "source text")
        if target:
            _need_file(f"{pref}.{tgt}", "target text")
        if args.trees_suffix:
            _need_file(f"{pref}.{src}.{args.trees_suffix.lstrip('.')}", "tree file")
    for path, what in ((args.bpe_codes, "BPE codes"), (args.tgt_bpe_codes, "target BPE codes"),
                       (args.tagdict, "tag dictionary"), (args.srcdict, "source dictionary"),
                       (args.tgtdict, "target dictionary"), (args.alignfile, "alignment file (--alignfile)")):
        if path:
            _need_file(path, what)
    align_files, align_missing = _alignment_files(args, splits)
    workdir = args.workdir or os.path.join(args.destdir, "bpe")
    if args.bpe_codes:
        fairseq_options.check_workdir(args, splits, workdir)
    check_inputs(args, splits)  # every input read through: UTF-8, both sides and the trees in step
    os.makedirs(args.destdir, exist_ok=True)

    # Words for the parser: the original text with --bpe-codes, else the segmented text's words.
    word_style = "none" if args.bpe_codes else args.subword_style
    parse_kwargs = dict(style=word_style, separator=args.bpe_separator, lenient=args.lenient,
                        unescape=parse.undoes_escapes(args.parser_lang or args.source_lang),
                        batch=max(args.parser_batch_size, 1000), progress=progress)

    if args.shard_id is not None:
        parser = _make_parser(args)
        shards = {}
        for name, pref in splits:
            path, n = parse.parse_shard(parser, f"{pref}.{src}", args.destdir, name, src, args.shard_id,
                                        args.num_shards, **parse_kwargs)
            shards[name] = {"trees": path, "sentences": n}
            print(f"[{name}] shard {args.shard_id} of {args.num_shards}: {n} trees -> {path}")
        return {"shard_id": args.shard_id, "num_shards": args.num_shards, "splits": shards}

    fairseq_options.check_existing_dictionaries(args)
    tag_dict_path = tag_dictionary_path(args.destdir, src)
    dict_paths = [fairseq_preprocess._dict_path(src, args.destdir), tag_dict_path]
    if target:
        dict_paths.insert(1, fairseq_preprocess._dict_path(tgt, args.destdir))
    new_dicts = [p for p in dict_paths if not os.path.exists(p)]  # removed again if the run fails

    # 0. Alignment files, checked against the text before the long work: {name: (user's file, user's prefix)}
    alignments = {name: (path, dict(splits)[name]) for name, path in align_files.items()}
    if args.alignfile and not args.dict_only:
        alignments["alignfile"] = (args.alignfile, args.trainpref)
    align_stats = {}
    for name, (path, pref) in alignments.items():
        job = word_alignments.AlignJob(path, f"{pref}.{src}", f"{pref}.{tgt}")
        align_stats[name] = word_alignments.convert(job, workers=args.workers, progress=progress,
                                                    desc=f"check {os.path.basename(path)}")

    # 1. BPE (with --dict-only into a folder removed at the end, unless --workdir names one)
    scratch = None
    if args.bpe_codes and args.dict_only and not args.workdir:
        scratch = workdir = tempfile.mkdtemp(prefix=".bpe-dict-only-", dir=args.destdir)
    seg_prefix = {name: pref for name, pref in splits}
    binarize_from = {name: path for name, (path, _) in alignments.items()}
    try:
        if args.bpe_codes:
            for name, pref in splits:
                apply_bpe(args.bpe_codes, f"{pref}.{src}", os.path.join(workdir, f"{name}.{src}"),
                          args.bpe_separator, args.workers, progress)
                if target:
                    apply_bpe(args.tgt_bpe_codes or args.bpe_codes, f"{pref}.{tgt}",
                              os.path.join(workdir, f"{name}.{tgt}"), args.bpe_separator, args.workers, progress)
                seg_prefix[name] = os.path.join(workdir, name)
            # word alignments -> subword alignments of the segmented text that fairseq binarizes
            for name, (path, pref) in alignments.items():
                seg = seg_prefix["train" if name == "alignfile" else name]
                out = seg + (f".{src}-{tgt}.alignfile" if name == "alignfile" else f".{args.align_suffix}")
                job = word_alignments.AlignJob(path, f"{pref}.{src}", f"{pref}.{tgt}", f"{seg}.{src}", f"{seg}.{tgt}",
                                               args.bpe_separator)
                align_stats[name] = word_alignments.convert(job, out, args.workers, progress,
                                                           desc=f"subword {os.path.basename(path)}")
                binarize_from[name] = out
        alignfile = binarize_from.pop("alignfile", None)
        result = _trees_phrases_fairseq(args, splits, seg_prefix, parse_kwargs, new_dicts, alignfile, binarize_from,
                                        {"files": align_stats, "missing": align_missing})
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return result


def _trees_phrases_fairseq(args, splits, seg_prefix, parse_kwargs, new_dicts, alignfile, align_from, alignments):
    """Trees, phrase files, fairseq-preprocess, alignments, checks, tag dictionary and report."""
    from fairseq.data import Dictionary
    from fairseq_cli import preprocess as fairseq_preprocess

    from . import fairseq_options, parse, word_alignments
    from .binarize import PhraseJob, TagTable, commit_split, discard_split, verify_token_counts, write_split
    from .report import SplitReport, write_report

    src, tgt = args.source_lang, args.target_lang
    progress = not args.no_progress_bar
    tag_dict_path = tag_dictionary_path(args.destdir, src)

    # 2. Trees
    trees = {}
    parser = None
    for name, pref in splits:
        if args.trees_suffix:
            trees[name] = f"{pref}.{src}.{args.trees_suffix.lstrip('.')}"
        elif args.num_shards > 1:
            trees[name] = parse.merge_shards(f"{pref}.{src}", args.destdir, name, src, args.num_shards)
        else:
            parser = parser or _make_parser(args)
            trees[name] = parse.tree_path(args.destdir, name, src)
            parse.parse_lines(parser, f"{pref}.{src}", trees[name], desc=f"parse {name} ({parser.device})",
                              **parse_kwargs)

    # 3. Phrase files (train first: it defines the tag dictionary; --dict-only: counted, not written),
    # 4. fairseq-preprocess and the alignments, 5. checks
    tags = TagTable(Dictionary.load(args.tagdict) if args.tagdict else None)
    style = "bpe" if args.bpe_codes else args.subword_style
    reports, written = {}, {}
    pref_of = dict(splits)
    try:
        for name, _ in splits:
            job = PhraseJob(src_path=f"{seg_prefix[name]}.{src}", tree_path=trees[name], levels=args.levels,
                            style=style, separator=args.bpe_separator, lenient=args.lenient,
                            text_path=f"{pref_of[name]}.{src}", parsed=not args.trees_suffix)
            reports[name] = SplitReport(name, args.levels, job.src_path, job.tree_path)
            out_prefix = None if args.dict_only else fairseq_preprocess.dataset_dest_prefix(args, name, src)
            written[name] = write_split(job, out_prefix, reports[name], tags, args.workers, progress,
                                        is_train=(name == "train"))

        fargs = fairseq_options.fairseq_args(args, seg_prefix, alignfile)
        try:
            fairseq_preprocess.main(fargs)
            for name, path in align_from.items():
                alignments["files"][name]["output"] = word_alignments.binarize(path, name, fargs)
            if alignfile:
                alignments["files"]["alignfile"]["output"] = os.path.join(args.destdir,
                                                                          f"alignment.{src}-{tgt}.txt")
        except (AssertionError, FileExistsError, FileNotFoundError, OSError) as e:
            raise PreprocessError(f"fairseq-preprocess failed: {type(e).__name__}: {e}") from None

        if not args.dict_only:
            for name, _ in splits:
                verify_token_counts(fairseq_preprocess.dataset_dest_prefix(args, name, src), written[name])
        for name in written:
            commit_split(written[name])
    except BaseException:
        for w in written.values():
            discard_split(w)
        # a dictionary left behind would make the same command refuse the --destdir next time
        for path in new_dicts:
            if os.path.exists(path):
                os.remove(path)
        raise

    if args.tagdict:
        if os.path.abspath(args.tagdict) != os.path.abspath(tag_dict_path):
            shutil.copyfile(args.tagdict, tag_dict_path)
    else:
        tags.dictionary.save(tag_dict_path)
    if args.dict_only:
        return _dict_only_summary(args, tags)
    for name in alignments["missing"]:
        print(f"[{name}] no alignment file {pref_of[name]}.{args.align_suffix}: no alignments for this split")
    report = {
        "destdir": args.destdir,
        "source_lang": src,
        "target_lang": tgt,
        "levels": args.levels,
        "phrase_prefixes": {name: phrase_prefix(fairseq_preprocess.dataset_dest_prefix(args, name, src), "{k}")
                            for name, _ in splits},
        "tag_dictionary": tag_dict_path,
        "tags": len(tags.dictionary) - tags.dictionary.nspecial,
        # the ids in the phrase files index these symbols: fairseq-train checks its tag dictionary against them
        TAG_SYMBOLS: list(tags.dictionary.symbols),
        "lenient": args.lenient,
        "splits": {name: r.as_dict() for name, r in reports.items()},
        "alignments": alignments,
    }
    print(write_report(report, args.destdir), end="")
    return report


def _dict_only_summary(args, tags) -> dict:
    """What --dict-only wrote, and the options that binarize with it."""
    from fairseq.data import Dictionary

    from . import fairseq_options

    src, tgt, dest = args.source_lang, args.target_lang, args.destdir
    paths = {"--srcdict": fairseq_options.dict_path(dest, src)}
    if not args.only_source:
        paths["--tgtdict"] = fairseq_options.dict_path(dest, tgt)
    sizes = {option: f"{len(Dictionary.load(path))} types" for option, path in paths.items()}  # fairseq's count
    paths["--tagdict"] = tag_dictionary_path(dest, src)
    sizes["--tagdict"] = f"{len(tags.dictionary) - tags.dictionary.nspecial} tags"
    print("mgsa-preprocess --dict-only: wrote " + ", ".join(f"{paths[o]} ({sizes[o]})" for o in paths))
    reuse = dict(paths)
    if args.joined_dictionary:
        reuse.pop("--tgtdict", None)  # fairseq takes the joined dictionary once
    print("binarize with them: the same command without --dict-only, plus "
          + " ".join(f"{o} {p}" for o, p in reuse.items()))
    return {"dict_only": True, "dictionaries": paths, "symbols": sizes,
            "tags": len(tags.dictionary) - tags.dictionary.nspecial}


def main(argv=None):
    """Console entry point: an input problem ends in one line naming file and line, exit status 1."""
    # fairseq-preprocess's lines (dictionary sizes, tokens replaced by <unk>) on stderr, the
    # report alone on stdout; a no-op where the caller has set up logging already
    logging.basicConfig(level=logging.INFO)
    args = get_parser().parse_args(argv)
    try:
        run(args)
    except PreprocessError as e:
        end_line()  # the message gets a line of its own, not the end of a progress bar's
        print(f"mgsa-preprocess: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
