"""The parts of benchmarks/bench_training.py (see its docstring): data (corpus, batches), timing
(the update, own and interleaved runs, FLOPs), decoding, profile (--profile), results (ratios,
the JSON, the history line, the summary), report (paper figures, targets, tables, the README's
table), env (device, peak memory on CPU)."""
