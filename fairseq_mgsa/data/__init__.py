from .phrase_pair_dataset import PhrasePairDataset  # noqa: F401
