"""The benchmarks: run from the checkout's root as `python -m benchmarks.NAME` (docs/benchmarks.md)."""
