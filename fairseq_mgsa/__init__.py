"""fairseq-mgsa: Multi-Granularity Self-Attention for fairseq (`--user-dir fairseq_mgsa`).

Importing the package registers its models, tasks and criterions with fairseq, and
lets torch.load read the checkpoints fairseq writes (see checkpoint_loading.py), and
ends fairseq's batch-prefetching threads before Python exits (see clean_exit.py), and makes
`--bf16` train in bfloat16 on the run's device instead of fairseq's TPU path (see bf16.py).
"""

from mgsa_preprocess.fairseq_import import import_fairseq

import_fairseq()  # before any fairseq import: without the root logger set-up fairseq's import makes

from . import bf16, checkpoint_loading  # noqa: F401,E402
from .clean_exit import install_exit_hook  # noqa: E402
from .errors import MGSAError, install_excepthook  # noqa: E402

install_excepthook()
install_exit_hook()
bf16.install()

from . import criterions, data, models, tasks  # noqa: F401,E402
from .models.mgsa_transformer import MGSATransformerModel  # noqa: F401,E402  (from_pretrained)
