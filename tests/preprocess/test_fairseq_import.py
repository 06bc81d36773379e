"""Startup noise (issue 45, point 8): importing fairseq set the root logger to DEBUG with a stderr
handler and logged "Please install tensorboardX", so `import fairseq_mgsa`, every command's --help
and a stanza model lookup (urllib3's DEBUG lines) printed lines that concern nobody's run.
Each case runs this checkout's code in a fresh process, as the user did."""

import subprocess
import sys

import pytest

from tests.paths import checkout_env, command, console_scripts


def python(tmp_path, code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=checkout_env(**env), cwd=tmp_path)


def test_importing_the_plugin_prints_nothing_and_leaves_the_root_logger_as_it_was(tmp_path):
    proc = python(tmp_path, "import logging, fairseq_mgsa, mgsa_preprocess.binarize\n"
                            "root = logging.getLogger()\n"
                            "print(len(root.handlers), logging.getLevelName(root.level))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.split() == ["0", "WARNING"]  # Python's defaults: no handler, WARNING


def test_the_users_own_logging_set_up_works_after_the_import(tmp_path):
    """Set up before the import: kept as it is, and the tensorboardX line is not among the user's
    INFO lines. Set up after the import: takes effect (fairseq's handler no longer blocks it)."""
    before = python(tmp_path, "import logging\n"
                              "logging.basicConfig(level=logging.INFO, format='mine %(name)s %(message)s')\n"
                              "import fairseq_mgsa\n"
                              "logging.getLogger('run').info('step 1')")
    after = python(tmp_path, "import logging, fairseq_mgsa\n"
                             "logging.basicConfig(level=logging.INFO, format='mine %(name)s %(message)s')\n"
                             "logging.getLogger('run').info('step 1')\n"
                             "logging.getLogger('run').debug('not shown')")
    for proc in (before, after):
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "mine run step 1\n"


@pytest.mark.parametrize("name", sorted(console_scripts()))
def test_every_command_prints_its_help_and_nothing_else(name, tmp_path):
    args = [] if name == "mgsa-user-dir" else ["--help"]  # mgsa-user-dir takes no option: it prints a path
    proc = subprocess.run(command(name, *args), capture_output=True, text=True, timeout=300,
                          env=checkout_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith(f"usage: {name}") if args else proc.stdout.strip().endswith("fairseq_mgsa")


def test_a_stanza_model_lookup_prints_the_error_line_alone(tmp_path):
    """--stanza-download reuse over a folder without models: stanza asks the network for its
    resource list (here refused by a proxy on a closed port, the same with or without network);
    urllib3 logged the connection at DEBUG."""
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.en").write_text("the dog ran .\n")
    (raw / "train.de").write_text("der Hund lief .\n")
    proc = subprocess.run(command("mgsa-preprocess", "-s", "en", "-t", "de", "--trainpref", raw / "train",
                                  "--destdir", tmp_path / "bin", "--parser", "stanza", "--stanza-download", "reuse",
                                  "--stanza-dir", tmp_path / "models", "--subword-style", "none",
                                  "--no-progress-bar"),
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=checkout_env(HTTPS_PROXY="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
                                           NO_PROXY="", no_proxy=""))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mgsa-preprocess: error: cannot load the stanza pipeline for language 'en'")
