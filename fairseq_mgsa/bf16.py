"""Moved to fairseq_mgsa/fairseq_patches/bf16.py. This old name stays the same module object,
so code that imports it or sets its attributes keeps working."""

import sys

from .fairseq_patches import bf16

sys.modules[__name__] = bf16
