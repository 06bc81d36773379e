"""Moved to fairseq_mgsa/fairseq_patches/clean_exit.py. This old name stays the same module object,
so code that imports it or sets its attributes keeps working."""

import sys

from .fairseq_patches import clean_exit

sys.modules[__name__] = clean_exit
