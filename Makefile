# The README's two commands are `make demo` and `make test`; both install first.
PYTHON ?= python3

.PHONY: install demo analyses test test-slow bench
install:
	bash scripts/install.sh

demo: install
	$(PYTHON) examples/demo/run_demo.py

# attention maps and the probing table (Table 5) on the grammar corpus, under analyses-out/
analyses: install
	$(PYTHON) examples/demo/run_analyses.py

test: install
	bash scripts/run_tests.sh

test-slow: install
	$(PYTHON) -m pytest -m slow -v

bench: install
	$(PYTHON) benchmarks/bench_training.py --arch-size tiny
