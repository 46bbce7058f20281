# The two commands: `make run` (set up, then start the service with the
# embedded defaults) and `make test` (set up, then run the test suite).
# Both install what they need. `make sample` parses the bundled sample with the CLI.
.PHONY: run test test-fast lint sample bench

run:
	@scripts/run.sh

sample:
	@scripts/setup.sh
	@.venv/bin/longdoc parse longdoc/samples/sample.pdf -o out
	@echo "outputs are in ./out (sample.md, sample.json, sample.txt)"

# The suite runs one pytest-xdist worker more than there are cores (many tests
# wait on servers, kills and timers: with a worker per core the cores were idle
# part of the time), a test file per worker at a time, the slowest files first
# (tests/conftest.py); the 15 slowest tests are listed.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

# ruff over longdoc/, tests/, bench/, evaluation/ and scripts/, then mypy over the
# package (both configured in pyproject.toml); test and test-fast run it first.
lint:
	@scripts/setup.sh test,torch
	.venv/bin/ruff check
	.venv/bin/mypy

test: lint
	@scripts/system-deps.sh
	@scripts/setup.sh test,torch
	.venv/bin/python -m pytest -q -n $(WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 $(PYTEST_ARGS)

# The fast tier: every test that needs no OCR or region model (tests/conftest.py
# MODEL_FILES lists the others), in a few minutes.
test-fast: lint
	@scripts/system-deps.sh
	@scripts/setup.sh test,torch
	.venv/bin/python -m pytest -q -n $(WORKERS) --dist loadfile --no-loadscope-reorder --fast --durations=10 $(PYTEST_ARGS)

bench:
	@scripts/setup.sh test,torch
	.venv/bin/python bench/run_all.py
