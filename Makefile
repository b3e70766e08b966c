# sparkscope: `make run` opens the REPL, `make test` runs every test. Both bootstrap .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test

.PHONY: run test unit bench lint install server-stop clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "sparkscope needs Python 3.10 or newer: install python3.11 (apt-get install python3.11-venv)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	@touch $@

$(TESTSTAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(STAMP)

run: $(STAMP)
	@$(BIN)/sparkscope

test: $(TESTSTAMP)
	@$(BIN)/sparkscope server check-java
	$(BIN)/python -m pytest tests -q

unit: $(TESTSTAMP)
	$(BIN)/python -m pytest tests/unit -q

bench: $(TESTSTAMP)
	$(BIN)/python benchmarks/run_all.py

lint: $(TESTSTAMP)
	$(BIN)/ruff check sparkscope tests benchmarks examples

server-stop: $(STAMP)
	$(BIN)/sparkscope server stop

clean:
	rm -rf $(VENV) build *.egg-info
