from . import mgsa_transformer  # noqa: F401
from . import pba_transformer  # noqa: F401
from . import hysan_transformer  # noqa: F401
