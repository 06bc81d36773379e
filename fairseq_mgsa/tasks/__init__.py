from . import mgsa_translation  # noqa: F401
