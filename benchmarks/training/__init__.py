"""The parts of benchmarks/bench_training.py: data (corpus, batches), update (the update, own and
interleaved runs, FLOPs), memory (peak memory on CPU, a process per system), decoding (as
fairseq-generate decodes, paired per batch), arithmetic (the share of the device's rate), results
(ratios, the JSON, the history line, the summary), report (paper figures, targets, the table), env
(device, probes). The timing itself: benchmarks/timing.py."""
