"""``mgsa-preprocess``: fairseq-preprocess plus the MG-SA phrase files, in one command.

Steps: (BPE with ``--bpe-codes``) -> trees (``--trees-suffix`` files, or
``--parser stanza``, optionally sharded) -> phrase files for every split, checked
against the trees and the text -> fairseq-preprocess itself, in process, with
all its options -> check that the phrase spans cover exactly fairseq's tokens ->
tag dictionary and report. Phrase files are only put in place once everything
has passed, so a failed run never leaves phrase files that look complete.
"""

import copy
import os
import shutil
import sys

from .errors import PreprocessError
from .progress import end_line

DESCRIPTION = ("Binarize a parallel corpus for fairseq (all fairseq-preprocess options apply) and write, for the "
               "source, the top-K syntactic phrase partitions of every sentence as phrase files "
               "{destdir}/{split}.{src}-{tgt}.{src}.syn{k}.bin/.idx, the tag dictionary dict.{src}.tags.txt and "
               "a report mgsa_preprocess_report.{json,txt}.")


def get_parser():
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

    return StanzaParser(args.parser_lang or args.source_lang, device=args.parser_device,
                        download=args.stanza_download, model_dir=args.stanza_dir, batch_size=args.parser_batch_size)


def run(args) -> dict:
    """Everything ``mgsa-preprocess`` does; returns the report (or the shard summary)."""
    # fairseq is imported here, not at module level, so that importing the CLI stays cheap
    from fairseq.data import Dictionary
    from fairseq_cli import preprocess as fairseq_preprocess

    from . import parse
    from .binarize import PhraseJob, TagTable, commit_split, discard_split, verify_token_counts, write_split
    from .bpe import apply_bpe
    from .report import SplitReport, write_report

    _check_args(args)
    src, tgt = args.source_lang, args.target_lang
    target = not args.only_source
    splits = _splits(args)
    progress = not args.no_progress_bar
    for name, pref in splits:
        _need_file(f"{pref}.{src}", "source text")
        if target:
            _need_file(f"{pref}.{tgt}", "target text")
        if args.trees_suffix:
            _need_file(f"{pref}.{src}.{args.trees_suffix.lstrip('.')}", "tree file")
    for path, what in ((args.bpe_codes, "BPE codes"), (args.tgt_bpe_codes, "target BPE codes"),
                       (args.tagdict, "tag dictionary"), (args.srcdict, "source dictionary"),
                       (args.tgtdict, "target dictionary")):
        if path:
            _need_file(path, what)
    os.makedirs(args.destdir, exist_ok=True)

    # Words for the parser: the original text with --bpe-codes, else the segmented text's words.
    word_style = "none" if args.bpe_codes else args.subword_style
    parse_kwargs = dict(style=word_style, separator=args.bpe_separator, lenient=args.lenient,
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

    # fairseq-preprocess refuses to overwrite dictionaries: say so before hours of work.
    tag_dict_path = os.path.join(args.destdir, f"dict.{src}.tags.txt")
    existing = [(fairseq_preprocess._dict_path(src, args.destdir), args.srcdict),
                (fairseq_preprocess._dict_path(tgt, args.destdir), args.tgtdict or not target),
                (tag_dict_path, args.tagdict)]
    for path, given in existing:
        if not given and os.path.exists(path):
            raise PreprocessError("already exists and would be rebuilt: use a fresh --destdir, or pass the "
                                  "dictionary (--srcdict/--tgtdict/--tagdict)", path)
    if not args.trainpref and not args.tagdict:
        raise PreprocessError("without --trainpref there is no split to build the tag dictionary from: pass --tagdict")

    # 1. BPE
    seg_prefix = {name: pref for name, pref in splits}
    if args.bpe_codes:
        workdir = args.workdir or os.path.join(args.destdir, "bpe")
        for name, pref in splits:
            apply_bpe(args.bpe_codes, f"{pref}.{src}", os.path.join(workdir, f"{name}.{src}"),
                      args.bpe_separator, args.workers, progress)
            if target:
                apply_bpe(args.tgt_bpe_codes or args.bpe_codes, f"{pref}.{tgt}", os.path.join(workdir, f"{name}.{tgt}"),
                          args.bpe_separator, args.workers, progress)
            seg_prefix[name] = os.path.join(workdir, name)

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

    # 3. Phrase files (train first: it defines the tag dictionary), 4. fairseq-preprocess, 5. checks
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
            out_prefix = fairseq_preprocess.dataset_dest_prefix(args, name, src)
            written[name] = write_split(job, out_prefix, reports[name], tags, args.workers, progress,
                                        is_train=(name == "train"))

        fargs = copy.copy(args)
        if args.bpe_codes:
            for key, prefix_name in (("trainpref", "train"), ("validpref", "valid"), ("testpref", "test")):
                if getattr(args, key):
                    names = [n for n, _ in splits if n.rstrip("0123456789") == prefix_name]
                    setattr(fargs, key, ",".join(seg_prefix[n] for n in names))
        try:
            fairseq_preprocess.main(fargs)
        except (AssertionError, FileExistsError, FileNotFoundError, OSError) as e:
            raise PreprocessError(f"fairseq-preprocess failed: {type(e).__name__}: {e}") from None

        for name, _ in splits:
            verify_token_counts(fairseq_preprocess.dataset_dest_prefix(args, name, src), written[name])
        for name in written:
            commit_split(written[name])
    except BaseException:
        for w in written.values():
            discard_split(w)
        raise

    if args.tagdict:
        if os.path.abspath(args.tagdict) != os.path.abspath(tag_dict_path):
            shutil.copyfile(args.tagdict, tag_dict_path)
    else:
        tags.dictionary.save(tag_dict_path)
    report = {
        "destdir": args.destdir,
        "source_lang": src,
        "target_lang": tgt,
        "levels": args.levels,
        "phrase_prefixes": {name: fairseq_preprocess.dataset_dest_prefix(args, name, src) + ".syn{k}"
                            for name, _ in splits},
        "tag_dictionary": tag_dict_path,
        "tags": len(tags.dictionary) - tags.dictionary.nspecial,
        # the ids in the phrase files index these symbols: fairseq-train checks its tag dictionary against them
        "tag_symbols": list(tags.dictionary.symbols),
        "lenient": args.lenient,
        "splits": {name: r.as_dict() for name, r in reports.items()},
    }
    print(write_report(report, args.destdir), end="")
    return report


def main(argv=None):
    """Console entry point: an input problem ends in one line naming file and line, exit status 1."""
    args = get_parser().parse_args(argv)
    try:
        run(args)
    except PreprocessError as e:
        end_line()  # the message gets a line of its own, not the end of a progress bar's
        print(f"mgsa-preprocess: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
