"""Every Python file of the checkout compiles without a warning.

An invalid escape in a docstring ("\\X") is a DeprecationWarning under Python 3.11 and a
SyntaxWarning under 3.12, printed to stderr by every command that imports the file: the
console scripts promise a quiet stderr, so the whole source is compiled here under the running
interpreter with those warnings recorded.
"""
import subprocess
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def python_files():
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout.strip():
        return [ROOT / f for f in listed.stdout.split()]
    # not a git checkout (an unpacked sdist): every file under the project's own folders
    return [p for p in ROOT.rglob("*.py") if "build" not in p.parts and ".git" not in p.parts]


def compile_warnings(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
    return [f"{path.relative_to(ROOT)}:{w.lineno}: {w.category.__name__}: {w.message}"
            for w in caught if issubclass(w.category, (SyntaxWarning, DeprecationWarning))]


def test_no_file_warns_when_compiled():
    found = [line for path in python_files() for line in compile_warnings(path)]
    assert found == []


def test_the_check_sees_an_invalid_escape(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text('"""a docstring with \\X in it"""\n', encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile(bad.read_text(encoding="utf-8"), str(bad), "exec")
    assert any("invalid escape sequence" in str(w.message) for w in caught)
