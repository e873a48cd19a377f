# rackafka developer commands.  `make test` is all a newcomer needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test venv kafka-jars test-kafka lint typecheck docs unit faults demo bench-records bench-consume bench-produce bench-spark wheel-check clean matrix matrix-python matrix-oldest matrix-kafka

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

# Apache Kafka's broker jars for the real-Kafka tests (tests/kafka): resolved once with Maven
# from Maven Central into ~/.cache/rackafka/kafka (RACKAFKA_KAFKA_CACHE), checksums verified.
# Where they cannot be had, only RACKAFKA_REQUIRE_KAFKA=1 (CI) makes this fail; elsewhere the
# real-Kafka tests skip with the reason.
kafka-jars: venv
	$(BIN)/python -m rackafka.testing kafka-jars || { [ -z "$$RACKAFKA_REQUIRE_KAFKA" ] && \
		echo "warning: no Kafka jars: the real-Kafka tests (tests/kafka) will skip" >&2; }

# pytest-xdist: most tests wait on timers and loopback round trips, so more workers than
# cores pay off (2 cores: 3 workers 7.6 min, 4: 4.7 min, 6: 4.3 min); the tests of
# tests/spark/ and of tests/kafka/ keep to one worker each (see tests/conftest.py).
# PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 6
unit: venv
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test: lint typecheck docs kafka-jars unit

# The real-Kafka essentials on one Apache Kafka release (3.7 or newer; default: the pinned
# one): closest-replica reads, a broker down, classic and KIP-848 groups, transactions,
# SASL_SSL.  `make test-kafka KAFKA_VERSION=3.7.2`; a feature the release lacks skips
# with the reason (see docs/compatibility.rst).
KAFKA_VERSION ?=
KAFKA_ESSENTIALS ?= tests/kafka/test_engine.py tests/kafka/test_consumer_kafka.py \
	tests/kafka/test_rack_selector.py tests/kafka/test_broker_restart.py \
	tests/kafka/test_groups_kafka.py tests/kafka/test_transactions_kafka.py \
	tests/kafka/test_security_kafka.py
test-kafka: venv
	$(if $(KAFKA_VERSION),RACKAFKA_KAFKA_VERSION=$(KAFKA_VERSION)) $(MAKE) kafka-jars
	$(if $(KAFKA_VERSION),RACKAFKA_KAFKA_VERSION=$(KAFKA_VERSION)) RACKAFKA_REQUIRE_KAFKA=1 \
		$(BIN)/pytest -q -n 0 -p no:cacheprovider $(KAFKA_ESSENTIALS) $(PYTEST_ARGS)

# The compatibility matrix (docs/testing.rst, "The CI matrix"; .ci/run runs `make matrix`):
# the unit suite without tests/kafka and tests/spark on every other Python (a virtualenv per
# cell under .venv-matrix/, from pyenv's interpreter; a missing one fails), on the oldest
# Python with the oldest dependency versions pyproject.toml allows, and the real-Kafka
# essentials on every supported Kafka release but the default one (which `make test` runs).
#   make matrix-python PY=3.13    make matrix-oldest [PY=3.10]    make matrix-kafka
MATRIX_PY_OLDEST ?= 3.10
MATRIX_PY_OTHERS ?= 3.12 3.13
MATRIX_KAFKA ?= 3.7.2 3.9.1 4.4.0
_MATRIX_ENV = PYTEST_WORKERS=$(PYTEST_WORKERS) PYTEST_ARGS="$(PYTEST_ARGS)"
matrix-python:
	@test -n "$(PY)" || { echo "usage: make matrix-python PY=3.13" >&2; exit 2; }
	$(_MATRIX_ENV) bash .ci/matrix python $(PY)

matrix-oldest:
	$(_MATRIX_ENV) bash .ci/matrix oldest $(or $(PY),$(MATRIX_PY_OLDEST))

matrix-kafka: venv
	set -e; for v in $(MATRIX_KAFKA); do $(MAKE) test-kafka KAFKA_VERSION=$$v; done

matrix: matrix-oldest
	set -e; for v in $(MATRIX_PY_OTHERS); do $(MAKE) matrix-python PY=$$v; done
	$(MAKE) matrix-kafka

# Fault injection on real Kafka, the long version of tests/kafka/test_group_faults.py: each
# scenario (classic cooperative-sticky, classic eager, KIP-848, transactional pipeline) runs
# FAULT_SECONDS of workload while faults of every kind drawn from FAULT_SEED play (SIGKILL,
# graceful restart, SIGSTOP/SIGCONT, rolling restart of the three brokers, member churn).
# The seed is printed first (default: a new one); FAULT_SEED=N replays a run.
FAULT_SECONDS ?= 180
FAULT_SEED ?=
_FAULT_SEED := $(or $(FAULT_SEED),$(shell od -An -N3 -tu4 /dev/urandom | tr -d ' '))
faults: venv kafka-jars
	@echo "make faults: FAULT_SEED=$(_FAULT_SEED) FAULT_SECONDS=$(FAULT_SECONDS)"
	RACKAFKA_FAULT_LONG=1 RACKAFKA_FAULT_SEED=$(_FAULT_SEED) \
		RACKAFKA_FAULT_SECONDS=$(FAULT_SECONDS) RACKAFKA_REQUIRE_KAFKA=1 \
		$(BIN)/pytest -q -s -p no:cacheprovider tests/kafka/test_group_faults.py $(PYTEST_ARGS)

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
# consumer group, then the Spark pipeline (needs Java 17+).  The brokers' engine goes to
# both scripts: DEMO_ENGINE=kafka, or an --engine in DEMO_ARGS (make demo
# DEMO_ARGS="--engine kafka": real Apache Kafka brokers); PIPELINE_ARGS may name another.
DEMO_ENGINE ?= $(strip $(patsubst --engine=%,%,$(filter --engine=%,$(DEMO_ARGS))) \
	$(shell set -- $(DEMO_ARGS); while [ $$# -gt 1 ]; do \
		[ "$$1" = --engine ] && echo "$$2"; shift; done))
_DEMO_ENGINE_ARG := $(if $(DEMO_ENGINE),--engine $(lastword $(DEMO_ENGINE)))
demo: venv
	$(BIN)/python examples/demo.py $(if $(findstring --engine,$(DEMO_ARGS)),,$(_DEMO_ENGINE_ARG)) $(DEMO_ARGS)
	$(BIN)/python examples/pipeline.py $(_DEMO_ENGINE_ARG) $(PIPELINE_ARGS)

# The package as users get it (.ci/wheel-check): build the sdist and the wheel, twine check,
# their files, then the wheel with its testing extra in a new virtualenv outside the checkout,
# running the demo's consumer part and a few test files (about a minute with pip's cache).
wheel-check: venv
	PYTHON=$(BIN)/python bash .ci/wheel-check

clean:
	rm -rf $(VENV) $(BENCH_VENV) .venv-matrix build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
