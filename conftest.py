# Puts the repository root on sys.path so the tests import this checkout's packages.
#
# The preprocess/ folder installs as `mgsa_preprocess` (setup.py's package_dir); the
# tests import it under that name from this checkout, not from an installed copy that
# may be older than the working tree.
import importlib.util
import os
import sys

_ROOT = os.path.dirname(os.path.abspath(__file__))
if "mgsa_preprocess" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        "mgsa_preprocess", os.path.join(_ROOT, "preprocess", "__init__.py"),
        submodule_search_locations=[os.path.join(_ROOT, "preprocess")])
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["mgsa_preprocess"] = _module
    _spec.loader.exec_module(_module)
