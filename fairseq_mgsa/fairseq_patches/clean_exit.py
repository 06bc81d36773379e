"""fairseq's batch-prefetching threads, ended before Python exits.

fairseq's BufferedIterator (`--data-buffer-size`, 10 by default) builds batches ahead of
training in a daemon thread. When a run stops inside an epoch (`--max-update`, or any
stop before the epoch's last batch), that thread is still building batches as Python
exits. Python ends a daemon thread at exit by unwinding its stack the next time the
thread asks for the interpreter lock; when the thread is inside torch's C++ code at that
moment (collating a batch, with the lock released), the unwinding meets a C++ frame that
must not be unwound and the C++ runtime aborts the process: "terminate called without an
active exception", exit status 134, after the checkpoint was saved and "done training"
logged. A finished run would read as a failed one, and a recipe would stop on it. With
`--num-workers 0` (the batches are collated in that thread) on a small model, up to 8 of
25 runs stopped by `--max-update 1` aborted so on two busy cores (Python 3.11 and 3.12 both).

Python runs its exit functions before it ends daemon threads, so an exit function that
lets each prefetching thread finish the batch it is building, and waits for it, leaves
no thread to unwind. fairseq gives the thread no stop method: we lower its batch limit
(the loop ends once it has queued as many batches as the limit) and empty its queue so
that its last `put` cannot block. The batches thrown away were never going to be used.
A thread that has not ended after WAIT_S (a data loader worker hung, say) is left to
Python as before, with a warning, rather than keeping a finished run from exiting.
"""

import atexit
import logging
import queue
import threading
import time

from fairseq.data.iterators import BackgroundConsumer

logger = logging.getLogger(__name__)
WAIT_S = 60.0  # building one batch takes milliseconds; this only bounds a hung thread


def stop_prefetching_threads():
    """End every live fairseq prefetching thread after the batch it is building."""
    for thread in threading.enumerate():
        if not isinstance(thread, BackgroundConsumer):
            continue
        thread._max_len = 0  # its loop breaks after its next `put` (count >= max_len)
        deadline = time.monotonic() + WAIT_S
        while thread.is_alive():
            if time.monotonic() > deadline:
                logger.warning("fairseq's batch-prefetching thread did not end within %.0f s; exiting anyway", WAIT_S)
                break
            try:
                while True:
                    thread._queue.get_nowait()
            except queue.Empty:
                pass
            thread.join(timeout=0.05)


def install_exit_hook():
    atexit.register(stop_prefetching_threads)
