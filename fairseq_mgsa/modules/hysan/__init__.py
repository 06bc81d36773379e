"""The hybrid self-attention network (HySAN): an attention whose heads form branches with their
own masks (and, in relative.py, relative positions), the fusion of the branches' outputs
(add, concat, gated sum), and the encoder and decoder layers that use them.
"""
