"""Phrase-based attention (PBA): n-gram convolutions over keys and values, the attention over
phrases (the batched layout for training, the incremental one for decoding), its masks, and
the encoder and decoder layers that use it.
"""
