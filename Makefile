# The README's two commands are `make demo` and `make test`; both install first.
PYTHON ?= python3

.PHONY: install demo analyses test test-long test-slow bench gpu-check gpu-test
install:
	bash scripts/install.sh

demo: install
	$(PYTHON) examples/demo/run_demo.py

# attention maps and the probing table (Table 5) on the grammar corpus, under analyses-out/
analyses: install
	$(PYTHON) examples/demo/run_analyses.py

test: install
	bash scripts/run_tests.sh

# the whole pipelines (marker long: recipes, the demo, the README's quick start, the GPU check's
# dry run, multi-process training, every system's commands); CI runs them after `make test`
test-long: install
	bash scripts/run_tests.sh -m "long and not slow"

test-slow: install
	$(PYTHON) -m pytest -m slow -v

# the tiny size, a quick look: into benchmarks/runs/ (ignored by git), not the committed results
bench: install
	$(PYTHON) -m benchmarks.bench_training --arch-size tiny

# on a machine with a CUDA GPU: the GPU check's tests (tests/gpu/check: every system trained and
# decoded in half precision, the invariants on the GPU), then the benchmark with --fp16 at base size
# and with bf16 at big size on 16k-token batches (at most 9 minutes on one H100; docs/gpu.md), into
# gpu-check/; `bash scripts/gpu_check.sh --dry-run` rehearses it on the CPU
gpu-check:
	PYTHON=$(PYTHON) bash scripts/gpu_check.sh

# on a machine with a CUDA GPU: the GPU tests (tests/gpu, marker gpu): the fused kernels at the
# model's widths, attention backends, layers and systems against float32/float64 (docs/gpu.md);
# the GPU check's phases (tests/gpu/check) skip here: make gpu-check runs them
gpu-test:
	$(PYTHON) -m pytest -m gpu tests/gpu -v -rs
