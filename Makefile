# sparkscope: `make run` opens the REPL, `make test` runs every test. Both bootstrap .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test
BENCHSTAMP := $(VENV)/.installed-bench
SOAK_MINUTES ?= 60

.PHONY: run test test-cluster unit bench soak lint docs install server-stop clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "sparkscope needs Python 3.10 or newer: install python3.11 (apt-get install python3.11-venv)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# pip's own progress lines instead of a silent minute; the build backend's editable-install warning is noise
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing sparkscope and pyspark into $(VENV) (about 450 MB; a minute or two the first time)…"
	PYTHONWARNINGS=ignore $(BIN)/pip install --progress-bar on -e . | grep -v '^Requirement already satisfied' || true
	@$(BIN)/python -c 'import sparkscope, pyspark' && touch $@
	@echo "Done. Put sparkscope on your PATH with: . $(VENV)/bin/activate"

$(TESTSTAMP): $(STAMP)
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[test]'
	@touch $@

$(BENCHSTAMP): $(TESTSTAMP)
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[test,bench]'
	@touch $@

install: $(STAMP)

run: $(STAMP)
	@$(BIN)/sparkscope

# Two pytest workers (pytest-xdist), each with its own sandbox and session server, a test file at a time:
# a single worker left the two cores idle 65% of the time while tests waited on the server's batches. With two,
# `vmstat 5` shows them 0-3% idle: the suite is CPU-bound, so the JVMs it starts are tuned for it (tests/conftest.py).
# The cluster tier (a standalone master, two workers and the Connect server) runs after the rest, in its
# own pytest process, so that no other Spark runs beside it.
TEST_WORKERS ?= 2
test: $(TESTSTAMP)
	@$(BIN)/sparkscope server check-java
	$(BIN)/python -m pytest tests -q -n $(TEST_WORKERS) --dist loadfile --durations=15 --ignore=tests/cluster
	$(BIN)/python -m pytest tests/cluster -q

test-cluster: $(TESTSTAMP)
	$(BIN)/python -m pytest tests/cluster -q

unit: $(TESTSTAMP)
	$(BIN)/python -m pytest tests/unit -q

bench: $(TESTSTAMP)
	$(BIN)/python benchmarks/run_all.py

# 20 queries for SOAK_MINUTES with :watch open; CSV and PNG in benchmarks/results/ (not part of bench)
soak: $(BENCHSTAMP)
	$(BIN)/python benchmarks/soak.py $(SOAK_MINUTES)

lint: $(TESTSTAMP)
	$(BIN)/ruff check sparkscope tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/python -m pytest tests/unit/test_house.py tests/unit/test_layering.py -q

# the command table of docs/repl.md, from the registry (make test fails when they drift apart)
docs: $(STAMP)
	$(BIN)/python scripts/command_reference.py

server-stop: $(STAMP)
	$(BIN)/sparkscope server stop

clean:
	rm -rf $(VENV) build *.egg-info
