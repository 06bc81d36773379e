"""When mgsa-train-parser's tagger and parser stop: on a plateau of the dev score, at their step or
epoch cap, or at a time cap when the user asks for one.

A plateau rule fits each treebank; the caps in steps and epochs bound the time a run may take,
and stop it at the same point whatever the machine's load (a wall-clock cap made the model
depend on how busy the machine was: docs/benchmarks-parser.md). Both trainers save the model at
each new best dev score, so stopping keeps the best one. The rule is checked after each dev
evaluation:

* patience: the best score is `patience` evaluations old (a new best must beat the old by
  `min_delta`, so that a crawl of +0.01 does not keep a run going for ever);
* time cap, only with `max_seconds`: one more evaluation interval, as long as the last one,
  would end past `max_seconds` (counted from the rule's creation).

A cap (of steps, epochs or time) that ends training before the plateau is reached is reported:
`cut_while_rising` says so, and mgsa-train-parser warns.

The tagger (stanza.models.tagger) has a step-based stop of its own, but it cannot print
progress, has no time cap, and first switches optimizer; the parser has none. So the rule is
ours, hooked into stanza's loops for the duration of the call: the dev scoring function to
observe the score and print a line, and the next training step to stop (StopTraining).
"""

import contextlib
import sys
import time

from ..progress import duration


class StopTraining(Exception):
    """Raised at the first training step after the stop rule fired."""


class Plateau:
    def __init__(self, patience: int, max_seconds: float = None, min_delta: float = 0.05, min_evals: int = 0,
                 clock=time.monotonic):
        self.patience, self.max_seconds, self.min_delta, self.min_evals = patience, max_seconds, min_delta, min_evals
        self.clock = clock
        self.start = clock()
        self.scores = []
        self.seconds = []  # from the rule's creation to each score
        self._last = self.start
        self.best_index = None  # 0-based index of the best score so far
        self.reason = None  # why it stopped, once it has
        self.stopped_by = None  # "patience" or "time cap", once the rule fired

    @property
    def best(self):
        return self.scores[self.best_index] if self.scores else None

    def observe(self, score: float) -> bool:
        """Record one dev score (a percentage); True if training should stop now."""
        self.scores.append(score)
        if self.best_index is None or score >= self.best + self.min_delta:
            self.best_index = len(self.scores) - 1
        now = self.clock()
        elapsed, interval, self._last = now - self.start, now - self._last, now
        self.seconds.append(round(elapsed, 1))
        since_best = len(self.scores) - 1 - self.best_index
        if len(self.scores) >= self.min_evals and since_best >= self.patience:
            self.stopped_by = "patience"
            self.reason = (f"no dev score {self.min_delta} above the best ({self.best:.2f}, evaluation "
                           f"{self.best_index + 1}) in {since_best} evaluations")
        elif self.max_seconds is not None and elapsed + interval > self.max_seconds:
            self.stopped_by = "time cap"
            self.reason = (f"time cap: another evaluation interval (about {duration(interval)}) would end past "
                           f"{duration(self.max_seconds)}")
        return self.reason is not None

    def cut_while_rising(self) -> bool:
        """True when training ended (by a cap: the rule's time cap, or the trainer's own step or
        epoch limit) before the patience rule could call it a plateau: a new best among the last
        `patience` scores, or fewer scores than `min_evals`, the least the rule judges on."""
        if self.stopped_by == "patience" or not self.scores:
            return False
        since_best = len(self.scores) - 1 - self.best_index
        return since_best < self.patience or len(self.scores) < self.min_evals


@contextlib.contextmanager
def tagger_stopping(rule: Plateau, eval_interval: int, max_steps: int, stream=None):
    """stanza's tagger under `rule`, one progress line per dev evaluation:

        [mgsa-train-parser] tagger step 196 (at most 5000): dev tag accuracy 93.41 (best 93.41, step 196) | elapsed 2m05s

    The scorer's result (UD's AllTags, here the XPOS accuracy) is read where stanza's loop
    gets it; the next update raises StopTraining once the rule fired."""
    from stanza.models import tagger

    saved_scorer, saved_trainer = tagger.scorer, tagger.Trainer

    class Scorer:
        @staticmethod
        def score(*args, **kwargs):
            result = saved_scorer.score(*args, **kwargs)
            accuracy = 100 * result[2]
            stop = rule.observe(accuracy)
            step = len(rule.scores) * eval_interval
            print(f"[mgsa-train-parser] tagger step {step} (at most {max_steps}): dev tag accuracy {accuracy:.2f} "
                  f"(best {rule.best:.2f}, step {(rule.best_index + 1) * eval_interval}) | elapsed "
                  f"{duration(rule.clock() - rule.start)}" + (f" | stopping: {rule.reason}" if stop else ""),
                  file=stream or sys.stdout, flush=True)
            return result

    class Trainer(saved_trainer):
        def update(self, *args, **kwargs):
            if rule.reason is not None:  # stanza saved the best model when it was scored
                raise StopTraining(rule.reason)
            return super().update(*args, **kwargs)

    tagger.scorer, tagger.Trainer = Scorer, Trainer
    try:
        yield
    finally:
        tagger.scorer, tagger.Trainer = saved_scorer, saved_trainer
