from . import label_smoothed_cross_entropy_with_phrase_tags  # noqa: F401
