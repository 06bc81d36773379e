from .composition import LSTMComposition, LSTMCompositions, MaxPoolComposition, SANComposition
from .granularities import Granularities, Granularity
from .interaction import LSTMInteraction, ONLSTMInteraction
from .mgsa_encoder_layer import MGSAEncoderLayer
from .multi_granularity_attention import MultiGranularitySelfAttention
from .partition import Partition, ngram_partition, spans_to_partition
from .phrase_memory import PhraseMemory
from .ngram_convolution import NGramConv
from .phrase_based_attention import PhraseBasedAttention
from .branch_fusion import BranchFusion, SqueezeGate
from .hybrid_attention import HybridMultiheadAttention
from .pba_layers import PBADecoderLayer, PBAEncoderLayer
from .hysan_layers import HySANDecoderLayer, HySANEncoderLayer
from .relative_attention import RelativeMultiheadAttention, RelativePositions
from .relative_layers import RelativeDecoderLayer, RelativeEncoderLayer
from .hybrid_relative import RelativeHybridMultiheadAttention
