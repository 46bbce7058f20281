# The two commands: `make run` (set up, then parse the bundled sample) and
# `make test` (set up, then run the test suite). Both install what they need.
.PHONY: run test bench

run:
	@scripts/setup.sh
	@.venv/bin/longdoc parse longdoc/samples/sample.pdf -o out
	@echo "outputs are in ./out (sample.md, sample.json, sample.txt)"

test:
	@scripts/system-deps.sh
	@scripts/setup.sh test
	.venv/bin/python -m pytest -q $(PYTEST_ARGS)

bench:
	@scripts/setup.sh test
	.venv/bin/python bench/run_all.py
