"""Checkpoints written by the earlier code (recorded_checkpoints.json: every registered system at
the tiny size, recorded at the commit it names) load with today's code and decode as they did
then: the same hypothesis for every validation sentence, with the same score."""

import json

import pytest

from fairseq_mgsa import systems as registry

from tests.fairseq_mgsa.models.recorded_checkpoints import (
    RECORDED, data_digest, decode, make_data, write_checkpoint,
)
from tests.fairseq_runs import USER_DIR

with open(RECORDED) as _f:
    RECORD = json.load(_f)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("corpus"))


def test_every_registered_system_was_recorded():
    assert sorted(RECORD["systems"]) == sorted(registry.SYSTEMS)


def test_the_corpus_is_the_one_recorded(data):
    # otherwise a failure below would be the data's, not the models'
    assert data_digest(data) == RECORD["data_sha256"]


@pytest.mark.parametrize("name", sorted(RECORD["systems"]))
def test_recorded_checkpoint_loads_and_decodes_as_before(name, data, tmp_path):
    recorded = RECORD["systems"][name]
    checkpoint = tmp_path / "checkpoint_last.pt"
    write_checkpoint(recorded, checkpoint, {"DATA": str(data), "USER_DIR": USER_DIR, "SAVE_DIR": str(tmp_path)})
    now = decode(checkpoint, data)
    before = recorded["hypotheses"]
    assert [(i, h) for i, h, _ in now] == [(i, h) for i, h, _ in before]
    assert [s for _, _, s in now] == pytest.approx([s for _, _, s in before], abs=1e-4)
