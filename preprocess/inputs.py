"""mgsa-preprocess's input files, read through before any work.

Every file the command will read is decoded once here (text_files.check_text): a byte that is
not UTF-8 is one line naming the file, line and column, not a traceback from the step that
reads it. The two sides of each split must have as many lines as each other, and the tree file
as many trees as the source has lines: fairseq-preprocess binarizes unequal sides without a
word, and fairseq-train then stops on an assertion.
"""

import os

from .binarize import PhraseJob, check_counts
from .errors import PreprocessError
from .text_files import check_text


def check_inputs(args, splits) -> None:
    """`splits`: [(split name, input prefix)]. Raises PreprocessError on the first problem."""
    src, tgt = args.source_lang, args.target_lang
    for name, pref in splits:
        src_path = f"{pref}.{src}"
        n_src = check_text(src_path, "the source text")
        if not args.only_source:
            tgt_path = f"{pref}.{tgt}"
            n_tgt = check_text(tgt_path, "the target text")
            if n_src != n_tgt:
                raise PreprocessError(f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt} lines: the {name} "
                                      f"split's source and target need one line per sentence pair, in the same order")
        if args.trees_suffix:
            tree_path = f"{pref}.{src}.{args.trees_suffix.lstrip('.')}"
            check_text(tree_path, "the tree file")
            # the trees against the user's own words (word-level text with --bpe-codes)
            check_counts(PhraseJob(src_path=src_path, tree_path=tree_path, style="none" if args.bpe_codes
                                   else args.subword_style, separator=args.bpe_separator))
        if args.align_suffix and not args.dict_only:
            path = f"{pref}.{args.align_suffix}"
            if os.path.isfile(path):  # a split without one is passed over (cli._alignment_files)
                check_text(path, "the alignment file")
    for path, what in ((args.bpe_codes, "the BPE codes"), (args.tgt_bpe_codes, "the target BPE codes"),
                       (args.tagdict, "the tag dictionary"), (args.srcdict, "the source dictionary"),
                       (args.tgtdict, "the target dictionary"), (args.alignfile, "the alignment file")):
        if path:
            check_text(path, what)

