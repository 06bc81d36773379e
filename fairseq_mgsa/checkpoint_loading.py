"""Moved to fairseq_mgsa/fairseq_patches/checkpoint_loading.py. This old name stays the same module object,
so code that imports it or sets its attributes keeps working."""

import sys

from .fairseq_patches import checkpoint_loading

sys.modules[__name__] = checkpoint_loading
