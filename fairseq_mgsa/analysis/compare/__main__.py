"""`python -m fairseq_mgsa.analysis.compare`: the same command as `mgsa-compare`."""

import sys

from fairseq_mgsa.analysis.compare.cli import main

sys.exit(main())
