"""Moved to fairseq_mgsa/fairseq_patches/shared_embeddings.py. This old name stays the same module object,
so code that imports it or sets its attributes keeps working."""

import sys

from .fairseq_patches import shared_embeddings

sys.modules[__name__] = shared_embeddings
