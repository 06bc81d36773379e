"""fairseq_mgsa/fairseq_patches/clean_exit.py: fairseq's prefetching threads end before Python exits, so a
run that stops inside an epoch exits 0 instead of aborting."""

import os
import subprocess
import sys
import threading

import pytest
import torch
from fairseq.data.iterators import BackgroundConsumer, BufferedIterator

from fairseq_mgsa.fairseq_patches.clean_exit import stop_prefetching_threads
from tests.paths import checkout_pythonpath

# The main thread takes one batch and exits while the prefetching thread keeps building
# batches in torch's C++ code (a matrix product, with the interpreter lock released). Its
# queue holds every batch, so the thread never waits on it (waiting there, in C, it
# would end quietly).
STOPS_INSIDE_AN_EPOCH = """
import sys, torch
torch.set_num_threads(1)
from fairseq.data.iterators import BufferedIterator
if sys.argv[1] == "plugin":
    import fairseq_mgsa  # what --user-dir does
class Batches:
    def __len__(self):
        return 200
    def __iter__(self):
        a = torch.randn(1200, 1200)
        for _ in range(200):
            yield torch.mm(a, a).sum()
batches = BufferedIterator(200, Batches())
next(batches)
print("done training", flush=True)
"""


def run_script(mode):
    env = dict(os.environ, PYTHONPATH=checkout_pythonpath(), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", STOPS_INSIDE_AN_EPOCH, mode], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_run_stopped_inside_an_epoch_exits_zero_with_the_plugin_loaded():
    for _ in range(3):
        proc = run_script("plugin")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout == "done training\n"


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Python 3.14 no longer unwinds daemon threads at exit")
def test_without_the_plugin_the_same_run_aborts():
    """The case the exit hook is for is real: without it, the C++ runtime aborts the process."""
    proc = run_script("bare")
    assert proc.stdout == "done training\n"
    assert proc.returncode == -6, (proc.returncode, proc.stderr[-2000:])
    assert "terminate called without an active exception" in proc.stderr


def test_stopping_ends_every_prefetching_thread_after_at_most_one_more_batch():
    built = []

    def batches():
        for i in range(1000):
            built.append(i)
            yield torch.full((2,), i)

    class Source:
        def __len__(self):
            return 1000

        def __iter__(self):
            return batches()

    iterators = [BufferedIterator(4, Source()) for _ in range(2)]
    assert next(iterators[0]).tolist() == [0, 0]
    assert next(iterators[1]).tolist() == [0, 0]
    stop_prefetching_threads()
    assert not [t for t in threading.enumerate() if isinstance(t, BackgroundConsumer)]
    # each thread stopped with its queue (4) full, plus the batch it was building and the one taken
    assert len(built) <= 2 * (4 + 2)


def test_a_hung_thread_is_left_after_the_wait_with_a_warning(monkeypatch, caplog):
    from fairseq_mgsa.fairseq_patches import clean_exit

    release = threading.Event()

    class Hung:
        def __len__(self):
            return 10

        def __iter__(self):
            yield torch.zeros(1)
            release.wait()
            yield torch.ones(1)

    batches = BufferedIterator(4, Hung())
    next(batches)
    monkeypatch.setattr(clean_exit, "WAIT_S", 0.2)
    stop_prefetching_threads()
    assert "did not end within" in caplog.text
    [hung] = [t for t in threading.enumerate() if isinstance(t, BackgroundConsumer)]
    release.set()
    hung.join(timeout=10)
    assert not hung.is_alive()
