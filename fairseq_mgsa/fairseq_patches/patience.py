"""`--patience` that survives a resume.

fairseq counts the validations without a new best (its `--patience`) in attributes of
`fairseq_cli.train.should_stop_early`, which no checkpoint holds: a run resumed from
`checkpoint_last.pt` starts the count afresh and takes its first validation after the resume as
the best to beat, so it stops later than the same run left alone (a run of the Tatoeba recipe
interrupted at update 6,300 stopped at 9,150 instead of 7,200). Runs longer than a session are
resumed as a matter of course, and every system must stop by the same rule, so the count is
written into each checkpoint's extra state beside fairseq's own "best" and read back on loading,
under fairseq's own condition for restoring "best" (neither --reset-optimizer nor --reset-meters).
"""

import sys

KEY = "mgsa_patience"


def _counter():
    """fairseq-train's should_stop_early, when fairseq-train is what runs (else None)."""
    train = sys.modules.get("fairseq_cli.train")
    return getattr(train, "should_stop_early", None)


def install():
    from fairseq.trainer import Trainer

    save, load = Trainer.save_checkpoint, Trainer.load_checkpoint

    def save_checkpoint(self, filename, extra_state):
        counter = _counter()
        if counter is not None and getattr(counter, "best", None) is not None:
            extra_state = {**extra_state, KEY: {"best": counter.best, "num_runs": counter.num_runs}}
        return save(self, filename, extra_state)

    def load_checkpoint(self, filename, reset_optimizer=False, reset_lr_scheduler=False,
                        optimizer_overrides=None, reset_meters=False):
        extra_state = load(self, filename, reset_optimizer, reset_lr_scheduler, optimizer_overrides,
                           reset_meters=reset_meters)
        counter = _counter()
        if (counter is not None and extra_state is not None and KEY in extra_state
                and not reset_optimizer and not reset_meters):
            counter.best = extra_state[KEY]["best"]
            counter.num_runs = extra_state[KEY]["num_runs"]
        return extra_state

    Trainer.save_checkpoint, Trainer.load_checkpoint = save_checkpoint, load_checkpoint
