"""What mgsa-train-parser replaces in stanza's constituency trainer while it runs in process.

* Dev scoring: stanza calls Java CoreNLP (not installed, not downloadable);
  ``parser_training.EvaluateParser`` becomes the Python scorer of preprocess/parser_training/bracket_score.py.
* Retagging: stanza downloads resources.json and a stock tagger; it gets the tagger just
  trained, loaded offline from the output directory.
* Progress: stanza logs an epoch's end among hundreds of lines of transition counts, and
  not at all under --quiet; its epoch and dev-scoring functions are wrapped to print one
  flushed line per epoch (dev F1, times, an estimate of the time left) and to record them.
"""

import contextlib
import json
import sys
import time

from ..progress import duration
from .bracket_score import score_pairs
from .stopping import StopTraining


class PythonEvaluator:
    """Stands where stanza's ``EvaluateParser`` (a Java CoreNLP server) is: same use as a
    context manager, same ``process(results)`` returning an object with ``f1`` (0-1)."""

    class Response:
        def __init__(self, f1):
            self.f1, self.treeF1, self.kbestF1 = f1, None, None

        def HasField(self, name):
            return getattr(self, name, None) is not None

    def __init__(self, kbest=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def process(self, results):
        pairs = (("{}".format(r.gold), "{}".format(r.predictions[0].tree)) for r in results)
        return self.Response(score_pairs(pairs, "dev gold", "dev parse").f1)


class EpochProgress:
    """One line per parser epoch, printed and flushed as the epoch's dev score is known:

        [mgsa-train-parser] parser epoch 3/20: dev F1 71.20 (best 71.20, epoch 3) | epoch 2m10s
        (train 1m58s, dev 12s) | elapsed 6m31s, about 37m55s left

    ``rows`` keeps the figures (epoch, dev_f1, train_seconds, dev_seconds) for the record, and
    ``jsonl``, if given, gets each row as it comes (a run stopped early keeps its epochs).
    ``setup_seconds``: from this object's creation to the first epoch (stanza reading and
    retagging the trees, building the model)."""

    def __init__(self, epochs: int, stream=None, clock=time.monotonic, jsonl: str = None, rule=None):
        self.epochs, self.stream, self.clock, self.jsonl, self.rule = epochs, stream, clock, jsonl, rule
        self.rows = []
        self._created = clock()
        self._start = self._epoch = None
        self.setup_seconds = None
        if jsonl:
            open(jsonl, "w").close()

    def wrap_epoch(self, train_model_one_epoch):
        def wrapped(epoch, *args, **kwargs):
            if self.rule is not None and self.rule.reason is not None:  # stanza saved the best epoch's model
                raise StopTraining(self.rule.reason)
            t0 = self.clock()
            if self._start is None:
                self._start = t0
                self.setup_seconds = round(t0 - self._created, 1)
            stats = train_model_one_epoch(epoch, *args, **kwargs)
            self._epoch = (epoch, self.clock() - t0)
            return stats
        return wrapped

    def wrap_dev(self, run_dev_set):
        def wrapped(*args, **kwargs):
            t0 = self.clock()
            result = run_dev_set(*args, **kwargs)  # (f1, kbest f1, tree f1)
            if self._epoch is not None:  # the dev scoring that ends an epoch
                (epoch, train_s), self._epoch = self._epoch, None
                self.report(epoch, result[0], train_s, self.clock() - t0)
            return result
        return wrapped

    def report(self, epoch: int, f1: float, train_s: float, dev_s: float) -> None:
        self.rows.append({"epoch": epoch, "dev_f1": round(100 * f1, 2), "train_seconds": round(train_s, 1),
                          "dev_seconds": round(dev_s, 1)})
        if self.jsonl:
            with open(self.jsonl, "a") as f:
                f.write(json.dumps(dict(self.rows[-1], setup_seconds=self.setup_seconds)) + "\n")
        best = max(self.rows, key=lambda r: r["dev_f1"])
        elapsed = self.clock() - self._start
        left = elapsed / len(self.rows) * (self.epochs - epoch)
        stop = self.rule is not None and self.rule.observe(100 * f1) and epoch < self.epochs
        print(f"[mgsa-train-parser] parser epoch {epoch}/{self.epochs}: dev F1 {100 * f1:.2f} "
              f"(best {best['dev_f1']:.2f}, epoch {best['epoch']}) | epoch {duration(train_s + dev_s)} "
              f"(train {duration(train_s)}, dev {duration(dev_s)}) | elapsed {duration(elapsed)}"
              + (f" | stopping: {self.rule.reason}" if stop else f", about {duration(left)} left"
                 if epoch < self.epochs else ""),
              file=self.stream or sys.stdout, flush=True)


@contextlib.contextmanager
def stanza_offline(out_dir: str, progress: EpochProgress = None):
    """stanza's constituency trainer without Java and without downloads, reporting epochs to `progress`."""
    from stanza.models.constituency import parser_training, retagging

    from ..stanza_model import load_pipeline

    names = ("EvaluateParser", "train_model_one_epoch", "run_dev_set")
    saved = [getattr(parser_training, n) for n in names], retagging.build_retag_pipeline
    parser_training.EvaluateParser = PythonEvaluator
    if progress is not None:  # iterate_training looks both up in the module at each epoch
        parser_training.train_model_one_epoch = progress.wrap_epoch(parser_training.train_model_one_epoch)
        parser_training.run_dev_set = progress.wrap_dev(parser_training.run_dev_set)
    retagging.build_retag_pipeline = lambda args: [load_pipeline(out_dir, processors="tokenize,pos")]
    try:
        yield
    finally:
        for n, f in zip(names, saved[0]):
            setattr(parser_training, n, f)
        retagging.build_retag_pipeline = saved[1]
