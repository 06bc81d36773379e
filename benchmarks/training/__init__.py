"""The parts of benchmarks/bench_training.py: data (corpus, batches), timing (the update, own and
interleaved runs, FLOPs; the paired timing every benchmark uses), memory (peak memory on CPU, a
process per system), decoding (fairseq-generate), decode_steps (decoding in this process), arithmetic
(the share of the device's rate), profile (--profile), results (ratios, the JSON, the history line,
the summary), report (paper figures, targets, tables, the README's table), env (device, probes)."""
