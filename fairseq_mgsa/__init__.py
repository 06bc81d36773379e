"""fairseq-mgsa: Multi-Granularity Self-Attention for fairseq (`--user-dir fairseq_mgsa`).

Importing the package registers its models, tasks and criterions with fairseq, and installs
the plugin's changes to fairseq's behaviour (fairseq_patches/: torch.load reads fairseq's
checkpoints, fairseq's batch-prefetching threads end before Python exits, `--bf16` trains in
bfloat16 on the run's device instead of fairseq's TPU path, the plugin's errors print as one line).
"""

from mgsa_preprocess.fairseq_import import import_fairseq

import_fairseq()  # before any fairseq import: without the root logger set-up fairseq's import makes

from . import fairseq_patches  # noqa: E402
from .errors import MGSAError  # noqa: F401,E402

fairseq_patches.install()

from . import criterions, data, models, tasks  # noqa: F401,E402
from .models.mgsa_transformer import MGSATransformerModel  # noqa: F401,E402  (from_pretrained)
