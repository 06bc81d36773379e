"""The plugin's models: each file registers its model and architectures when imported, and
every file here is imported, as fairseq imports its own models (so a new method's model
file needs no line here)."""

import importlib
import os

for _file in sorted(os.listdir(os.path.dirname(__file__))):
    if _file.endswith(".py") and not _file.startswith("_"):
        importlib.import_module(f"{__name__}.{_file[:-3]}")
