"""scripts/import_graph.py: rooms, arrows and circles of a small tree, against counts written out here."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_graph.py"

TREE = {
    "fairseq_mgsa/__init__.py": "from . import models\n",
    "fairseq_mgsa/errors.py": "class MGSAError(Exception):\n    pass\n",
    "fairseq_mgsa/models/__init__.py": "from .model import Model\n",
    "fairseq_mgsa/models/model.py": "from ..errors import MGSAError\nfrom ..modules import layer\n",
    "fairseq_mgsa/modules/__init__.py": "",
    "fairseq_mgsa/modules/layer.py": "import torch\nfrom . import helper\n",
    "fairseq_mgsa/modules/helper.py": "from fairseq_mgsa.modules.layer import X\n",
    "preprocess/cli.py": "from mgsa_preprocess import trees\n",
    "preprocess/trees.py": "import os\n",
    "tests/test_x.py": "from fairseq_mgsa.modules import layer\n",
}


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def run(repo, *args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=repo, capture_output=True, text=True)


def make_repo(tmp_path):
    for name, text in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tree")
    return tmp_path


def test_rooms_arrows_and_the_one_circle(tmp_path):
    repo = make_repo(tmp_path)
    out = run(repo)
    assert out.returncode == 0, out.stderr
    # rooms: fairseq_mgsa/, models/, modules/, preprocess/ (tests are not drawn); arrows between
    # rooms: top -> models, models -> top (errors), models -> modules; helper <-> layer is the circle
    assert "4 rooms, 3 arrows between rooms, 1 import circles" in out.stdout
    assert "circle: fairseq_mgsa/modules/helper.py <-> fairseq_mgsa/modules/layer.py" in out.stdout
    assert "| fairseq_mgsa/modules/ | 3 | 3 |" in out.stdout
    assert "tests" not in out.stdout


def test_a_past_commit_is_drawn_from_git(tmp_path):
    repo = make_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "fairseq_mgsa/modules/helper.py").write_text("X = 1\n")
    git(repo, "commit", "-qam", "break the circle")
    assert "0 import circles" in run(repo).stdout
    assert "1 import circles" in run(repo, "--rev", first).stdout


def test_an_unknown_revision_is_one_line(tmp_path):
    out = run(make_repo(tmp_path), "--rev", "no-such-commit")
    assert out.returncode == 1
    assert out.stderr.startswith("import_graph.py: error: git could not read no-such-commit")
