from . import mgsa_transformer  # noqa: F401
