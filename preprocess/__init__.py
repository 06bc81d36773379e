"""Data preparation for MG-SA: constituency trees -> top-K phrase partitions -> fairseq binaries.

The steps, one module each, in data-flow order:

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
