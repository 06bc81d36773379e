"""Where the tests find the checkout, whatever folder they sit in, and an environment in which
a subprocess imports this checkout's packages."""

import atexit
import importlib.util
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def load_script(path: str, name: str):
    """A script that is not in a package (an example's), imported in this process as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SHIM = []


def checkout_env(**extra) -> dict:
    """os.environ for a subprocess that imports this checkout's `fairseq_mgsa` and `mgsa_preprocess`.

    PYTHONPATH=ROOT alone gives the checkout's fairseq_mgsa but not its preprocess/ folder, which
    installs as mgsa_preprocess: an editable install elsewhere would answer that import (and a
    console script's). A folder holding `mgsa_preprocess` -> ROOT/preprocess, first on the path,
    answers it from here (an editable install's finder comes after the path); one a process,
    removed when it ends."""
    return dict(os.environ, PYTHONPATH=checkout_pythonpath(), OMP_NUM_THREADS="1", **extra)


def checkout_pythonpath() -> str:
    """The PYTHONPATH of checkout_env: the folder with `mgsa_preprocess`, ROOT, then the caller's."""
    if not _SHIM:
        _SHIM.append(tempfile.mkdtemp(prefix="checkout-path-"))
        os.symlink(os.path.join(ROOT, "preprocess"), os.path.join(_SHIM[0], "mgsa_preprocess"))
        atexit.register(shutil.rmtree, _SHIM[0], True)
    return os.pathsep.join([_SHIM[0], ROOT] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))


def console_scripts() -> dict:
    """{command: (module, function)} of setup.py's console_scripts."""
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        return {name: (module, func) for name, module, func in
                re.findall(r'"([\w-]+) = ([\w.]+):(\w+)"', f.read())}


def command(name: str, *args) -> list:
    """The argv that runs console script `name` as its installed wrapper does (sys.exit(main())),
    from whatever the environment imports (checkout_env: this checkout)."""
    module, func = console_scripts()[name]
    code = f"import sys; from {module} import {func}; sys.argv[0] = {name!r}; sys.exit({func}())"
    return [sys.executable, "-c", code, *map(str, args)]
