"""Multi-granularity self-attention (MG-SA): the granularities and their partitions of a
sentence into phrases, the phrase composition (one vector per phrase) and interaction (a
recurrence over a granularity's phrases, whose kernels are in fairseq_mgsa/ops/), the phrase
memory they form, the attention whose heads read it, and the encoder layer around it.
"""
