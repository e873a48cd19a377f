# rackafka developer commands.  `make test` is all a newcomer needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test venv lint typecheck docs unit demo bench-records bench-consume bench-produce bench-spark clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,spark,docs]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: venv
	$(BIN)/mypy

# The documentation site (docs/_build/html); warnings are errors.
docs: venv
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

# pytest-xdist: most tests wait on timers and loopback round trips, so more workers than
# cores pay off (2 cores: 3 workers 7.6 min, 4: 4.7 min, 6: 4.3 min); the tests of
# tests/spark/ and of tests/kafka/ keep to one worker each (see tests/conftest.py).
# PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 6
unit: venv
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test: lint typecheck docs unit

BENCH_VENV ?= .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q -e '.[test,bench,spark]'
	touch $@

bench-records: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python benchmarks/records.py $(BENCH_ARGS)

bench-consume: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python benchmarks/consume.py $(BENCH_ARGS)

bench-produce: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python benchmarks/produce.py $(BENCH_ARGS)

bench-spark: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python benchmarks/spark_read.py $(BENCH_ARGS)

# The main job on the embedded 3-rack cluster: reads without and with client_rack, then a
# consumer group, then the Spark pipeline (needs Java 17+).
demo: venv
	$(BIN)/python examples/demo.py $(DEMO_ARGS)
	$(BIN)/python examples/pipeline.py $(PIPELINE_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
