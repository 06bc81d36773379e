"""PhrasePairDataset: phrase files beside fairseq's token binaries, through fairseq's collater."""

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset, data_utils
from fairseq.data.indexed_dataset import MMapIndexedDatasetBuilder

from fairseq_mgsa import MGSAError
from fairseq_mgsa.data import PhrasePairDataset
from fairseq_mgsa.modules import spans_to_partition
from fairseq_mgsa.data import phrase_pair_dataset
from fairseq_mgsa.data.phrase_pair_dataset import clip_phrases

# three sentences (token ids without EOS) and two levels of phrases: (lengths, tags)
SENTENCES = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14]]
LEVELS = [
    [([1, 4], [4, 5]), ([2], [6]), ([1, 2], [4, 5])],
    [([1, 1, 3], [4, 7, 4]), ([1, 1], [7, 4]), ([1, 1, 1], [4, 7, 4])],
]


def write_level(prefix, entries):
    b = MMapIndexedDatasetBuilder(prefix + ".bin", dtype=np.int32)
    for lengths, tags in entries:
        b.add_item(torch.tensor(lengths + tags, dtype=torch.int32))
    b.finalize(prefix + ".idx")
    return data_utils.load_indexed_dataset(prefix, None, "mmap")


def make_dataset(tmp_path, left_pad, levels=LEVELS, sentences=SENTENCES, truncated=False):
    d = Dictionary()
    for i in range(20):
        d.add_symbol(f"w{i}")
    src = [torch.tensor(s + [d.eos()]) for s in sentences]
    pair = LanguagePairDataset(src, [len(s) for s in src], d, src, [len(s) for s in src], d,
                               left_pad_source=left_pad, shuffle=False)
    files = [write_level(str(tmp_path / f"p.syn{k + 1}"), lv) for k, lv in enumerate(levels)]
    return PhrasePairDataset(pair, files, tag_pad=1, name=str(tmp_path / "p"), truncated=truncated), d


@pytest.mark.parametrize("left_pad", [True, False])
def test_collater_puts_every_sentence_phrases_in_batch_order(tmp_path, left_pad):
    ds, d = make_dataset(tmp_path, left_pad)
    batch = ds.collater([ds[i] for i in range(3)])
    order = batch["id"].tolist()
    assert order == [0, 2, 1]  # fairseq sorts by source length
    lengths, counts = batch["net_input"]["src_phrase_lengths"], batch["net_input"]["src_phrase_counts"]
    tags = batch["phrase_tags"]
    assert lengths.shape == (2, 3, 3) and tags.shape == (2, 3, 3)
    for b, i in enumerate(order):
        for k in range(2):
            lens, tgs = LEVELS[k][i]
            assert counts[k, b] == len(lens)
            assert lengths[k, b].tolist() == lens + [0] * (3 - len(lens))
            assert tags[k, b].tolist() == tgs + [1] * (3 - len(tgs))
    # the model's partition from these tensors gives each token its phrase, EOS alone
    tokens = batch["net_input"]["src_tokens"]
    part = spans_to_partition(lengths[0], counts[0], tokens.eq(d.pad()))
    for b, i in enumerate(order):
        real = part.phrase_index[b][tokens[b].ne(d.pad())].tolist()
        expected = [p for p, n in enumerate(LEVELS[0][i][0]) for _ in range(n)] + [len(LEVELS[0][i][0])]
        assert real == expected


def test_sentence_count_mismatch_names_the_file(tmp_path):
    with pytest.raises(MGSAError, match=r"p\.syn2: 2 sentences, but the source binaries hold 3"):
        make_dataset(tmp_path, True, levels=[LEVELS[0], LEVELS[1][:2]])


def test_token_length_mismatch_names_file_and_sentence(tmp_path, monkeypatch):
    bad = [LEVELS[0][0], ([3], [6]), LEVELS[0][2]]  # sentence 2 has 2 tokens, phrases cover 3
    message = r"p\.syn1, sentence 2: the phrases cover 3 tokens but the source has 2"
    with pytest.raises(MGSAError, match=message):  # when opened: a sample of sentences is checked
        make_dataset(tmp_path, True, levels=[bad])
    monkeypatch.setattr(phrase_pair_dataset, "CHECKED_AT_LOAD", 0)  # beyond the sample: at the first batch
    ds, _ = make_dataset(tmp_path, True, levels=[bad])
    ds[0]
    with pytest.raises(MGSAError, match=message):
        ds[1]


def test_truncated_sources_get_clipped_phrases(tmp_path):
    # sentence 1 cut to 3 tokens (as --truncate-source would): phrases [1, 4] -> [1, 2]
    sentences = [SENTENCES[0][:3]] + SENTENCES[1:]
    ds, _ = make_dataset(tmp_path, True, sentences=sentences, truncated=True)
    (lens0, tags0), (lens1, tags1) = ds[0]["phrases"]
    assert lens0.tolist() == [1, 2] and tags0.tolist() == [4, 5]
    assert lens1.tolist() == [1, 1, 1] and tags1.tolist() == [4, 7, 4]


def test_clip_phrases_at_a_boundary():
    lens, tags = clip_phrases(torch.tensor([2, 3, 1]), torch.tensor([4, 5, 6]), 5)
    assert lens.tolist() == [2, 3] and tags.tolist() == [4, 5]
