"""The data phase: a corpus from the project's grammar with gold trees, binarized with its phrase
files, into OUT/data-bin (the later phases train and decode it)."""

import json
import os
import time

import pytest

from . import records
from .settings import data_dir, settings

pytestmark = pytest.mark.gpu


def test_corpus(out, dry_run):
    from benchmarks.training.data import make_data

    s = settings(dry_run)
    t0 = time.perf_counter()
    data, phrases = make_data(os.path.join(out, "corpus"), s.train_sentences, s.test_sentences, seed=1,
                              valid_sentences=s.valid_sentences)
    os.replace(data, data_dir(out))
    rec = records.append(out, {"kind": "data", "phase": "data", "train_sentences": s.train_sentences,
                               "test_sentences": s.test_sentences, "phrases": phrases,
                               "seconds": round(time.perf_counter() - t0, 1)})
    print(json.dumps(rec))
    assert os.path.isdir(data_dir(out))
