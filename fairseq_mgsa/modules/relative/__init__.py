"""Relative-position self-attention (Shaw et al.'s clipped relative positions) and the encoder
and decoder layers of the relative Transformer; HySAN's relative branches use the attention
from here.
"""
