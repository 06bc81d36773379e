"""The methods' layers and attentions, one folder per method: mgsa/ (multi-granularity
self-attention: granularities, partitions, phrase composition and interaction), pba/
(phrase-based attention), hysan/ (the hybrid self-attention network and its branch fusion),
relative/ (relative-position attention, which HySAN's relative branches also use), and
shared/ for what several methods use. The operators with their own kernels live in
fairseq_mgsa/ops/. The names below are the package's public interface; the files' old
names (fairseq_mgsa.modules.multi_granularity_attention, ...) still import, with a warning,
for one release (_moved.py).
"""

from . import _moved
from .mgsa.composition import LSTMComposition, LSTMCompositions, MaxPoolComposition, SANComposition
from .mgsa.granularities import Granularities, Granularity
from .mgsa.interaction import LSTMInteraction, ONLSTMInteraction
from .mgsa.encoder_layer import MGSAEncoderLayer
from .mgsa.attention import MultiGranularitySelfAttention
from .mgsa.partition import Partition, ngram_partition, spans_to_partition
from .mgsa.phrase_memory import PhraseMemory
from .pba.ngram_convolution import NGramConv
from .pba.attention import PhraseBasedAttention
from .hysan.branch_fusion import BranchFusion, SqueezeGate
from .hysan.attention import HybridMultiheadAttention
from .pba.layers import PBADecoderLayer, PBAEncoderLayer
from .hysan.layers import HySANDecoderLayer, HySANEncoderLayer
from .relative.attention import RelativeMultiheadAttention, RelativePositions
from .relative.layers import RelativeDecoderLayer, RelativeEncoderLayer
from .hysan.relative import RelativeHybridMultiheadAttention

_moved.install()


def __getattr__(name: str):
    if name in _moved.MOVED:
        return _moved.attribute(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
