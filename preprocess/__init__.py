"""Data preparation for MG-SA, installed as ``mgsa_preprocess``. Four parts:

1. The phrase pipeline (``mgsa-preprocess``): constituency trees -> top-K phrase partitions ->
   fairseq binaries; the modules below.
2. ``parser_training/``: ``mgsa-train-parser``, a stanza parser trained offline on a treebank,
   for the pipeline to parse with (its own docstring lists its modules).
3. ``synthetic``: the project's grammar, a parallel corpus with gold trees whose translation depends
   on the tree (the demo, the analyses and the tests run on it;
   ``python -m mgsa_preprocess.synthetic``); ``synthetic_zh``: the same with a Chinese source.
4. ``segment_zh``: ``mgsa-segment-zh``, Chinese word segmentation (jieba), run once before the rest.

Shared by them: ``errors`` (one-line errors naming file and line), ``text_files`` (the user's
text files read as UTF-8, a bad byte named by file, line and column), ``progress`` (progress
bars and durations), ``stanza_model`` (where a trained stanza model's files are, which folder
may hold one, and loading it), ``fairseq_import`` (fairseq imported without the logging set-up
its import makes).

The phrase pipeline's steps, one module each, in data-flow order:

* ``inputs``    every input read through before any work: encodings, line counts of the sides and the trees
* ``bpe``       apply subword-nmt codes (optional; pre-segmented text is read as is)
* ``parse``     stanza constituency parsing, sharded over machines, and the merge of shards
* ``trees``     read bracketed trees (PTB files included) and normalise them
* ``partition`` the top-K levels of a tree as word spans with tags
* ``align``     words <-> subword pieces of a source line
* ``binarize``  phrase files in fairseq's indexed-dataset format and the tag dictionary
* ``word_alignments`` --align-suffix / --alignfile files: checked, mapped to subwords with BPE, binarized
* ``fairseq_options`` fairseq-preprocess's options: refused before work, or carried through
* ``report``    what was read, written, normalised or repaired
* ``cli``       the ``mgsa-preprocess`` console command
"""
