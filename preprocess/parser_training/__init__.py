"""``mgsa-train-parser``: an English, Chinese (or any PTB-format) constituency parser trained offline with
stanza, for the phrase pipeline to parse with (``mgsa-preprocess --stanza-dir``).

One module a step, in the order a training run takes them:

* ``treebank``       read and check the treebank files (--treebank-format ptb, ctb, sinica); write
                     stanza's CoNLL-U and tree files
* ``ctb``            the Penn Chinese Treebank's files as distributed: SGML wrappers removed
* ``sinica``         the Sinica Treebank's ICG lines as bracketed trees (``python -m
                     mgsa_preprocess.parser_training.sinica``)
* ``segment_check``  how often a treebank's word segmentation and jieba's differ
* ``word_vectors``   word vectors learned from text (gensim), read from a file, or random
* ``stopping``       when the tagger and the parser stop: patience on dev, step (epoch) caps, time caps
                     only where asked
* ``stanza_offline`` what is replaced inside stanza's trainers to run offline, and one line an epoch
* ``parser_eval``    the trained directory loaded as mgsa-preprocess loads it, scored on dev and test
* ``bracket_score``  labeled bracket F1 as mgsa-preprocess reads trees (``python -m
                     mgsa_preprocess.parser_training.bracket_score``); ``evalb`` under evalb's
                     COLLINS.prm convention; ``scores`` the counts both add up
* ``train_parser``   the command
"""
