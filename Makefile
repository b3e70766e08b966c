# sparkscope: `make run` opens the REPL, `make test` runs every test. Both bootstrap .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test
BENCHSTAMP := $(VENV)/.installed-bench
LABSTAMP := $(VENV)/.installed-lab
SOAK_MINUTES ?= 60
# Servers that are not sparkscope's own, for the tests' server tier (tests/foreign_server.py): each a venv of its
# own, built once (pip's cache keeps a rebuild fast). `bare` is the pinned pyspark without extras (the official
# image's Python); `spark-4.0` is the oldest Spark line we support, its Python made from server-config/requirements.txt.
# pyproject.toml takes any pyspark from 4.0 to 4.3 (beside a project's own); sparkscope's own venv holds the newest
PYSPARK_PIN := 4.3.0
OLDEST_SPARK := 4.0.5
SERVER_VENVS := .venv-servers/bare/.installed .venv-servers/spark-4.0/.installed .venv-servers/spark-4.2/.installed
# A third server runs the bare pyspark on another Python minor version than the client's, when this machine has
# one (python3.12, python3.13, python3.10 on the PATH, or pyenv's); without one, the tier leaves that server out.
PY_MINOR := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
OTHER_PYTHON ?= $(shell for p in $$(command -v python3.12 python3.13 python3.10 2>/dev/null) $$(ls -dr $$HOME/.pyenv/versions/3.1[0-9]*/bin/python3 2>/dev/null); do v=$$($$p -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue; [ "$$v" != "$(PY_MINOR)" ] && echo $$p && break; done)
ifneq ($(OTHER_PYTHON),)
SERVER_VENVS += .venv-servers/other-python/.installed
endif

.PHONY: jar client-venvs test-clients test-kafka run test test-cluster test-servers test-guide server-venvs unit check bench soak lint docs install lab server-stop clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "sparkscope needs Python 3.10 or newer: install python3.11 (apt-get install python3.11-venv)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# pip's own progress lines instead of a silent minute; the build backend's editable-install warning is noise
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing sparkscope and pyspark into $(VENV) (about 450 MB; a minute or two the first time)…"
	PYTHONWARNINGS=ignore $(BIN)/pip install --progress-bar on -e . "pyspark[connect]==$(PYSPARK_PIN)" | grep -v '^Requirement already satisfied' || true
	@$(BIN)/python -c 'import sparkscope, pyspark' && touch $@
	@echo "Done. Put sparkscope on your PATH with: . $(VENV)/bin/activate (notebooks: make lab)"

$(TESTSTAMP): $(STAMP)
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[test]'
	@touch $@

$(BENCHSTAMP): $(TESTSTAMP)
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[test,bench]'
	@touch $@

install: $(STAMP)

# JupyterLab and the kernel's extra (sparkscope[jupyter]) in the same venv: %load_ext sparkscope (docs/notebooks.md)
$(LABSTAMP): $(STAMP)
	PYTHONWARNINGS=ignore $(BIN)/pip install -q -e '.[jupyter]' 'jupyterlab>=4'
	@touch $@

lab: $(LABSTAMP)
	$(BIN)/jupyter lab

# The tiers' venvs have no pip of their own (ensurepip takes 5 s of CPU a venv, and they are built beside the main tier,
# which needs the CPU): the main venv's pip fills them (`--python`). pip writes the .pyc files of what it installs, and
# keeps them: where PYTHONDONTWRITEBYTECODE is set (this machine's environment, many container images) Python never
# writes one, so without them every process compiles each module it imports (tried: the suite's CPU went up a sixth).
TIER_VENV = rm -rf $(1) && $(2) -m venv --without-pip $(1)
TIER_PIP = PYTHONWARNINGS=ignore $(BIN)/pip --python $(1)/bin/python install -q --disable-pip-version-check

.venv-servers/bare/.installed: pyproject.toml | $(STAMP)
	$(call TIER_VENV,.venv-servers/bare,$(PYTHON))
	$(call TIER_PIP,.venv-servers/bare) pyspark==$(PYSPARK_PIN) 2>&1 | grep -v "^WARNING: Location" || true
	@.venv-servers/bare/bin/python -c 'import pyspark' && touch $@

.venv-servers/spark-4.0/.installed: server-config/requirements.txt | $(STAMP)
	$(call TIER_VENV,.venv-servers/spark-4.0,$(PYTHON))
	$(call TIER_PIP,.venv-servers/spark-4.0) pyspark==$(OLDEST_SPARK) -r server-config/requirements.txt 2>&1 | grep -v "^WARNING: Location" || true
	@.venv-servers/spark-4.0/bin/python -c 'import pyspark, pandas, pyarrow' && touch $@

# The Kafka tier's server (tests/kafka/): Spark's own Kafka connector, which Maven Central here serves up to 4.2.0, on a
# pyspark 4.2 of its own, with this checkout's sparkscope (its `server start --kafka`, its jar)
KAFKA_SPARK := 4.2.0
.venv-servers/spark-4.2/.installed: pyproject.toml | $(STAMP)
	$(call TIER_VENV,.venv-servers/spark-4.2,$(PYTHON))
	$(call TIER_PIP,.venv-servers/spark-4.2) "pyspark[connect]==$(KAFKA_SPARK)" 2>&1 | grep -v "^WARNING: Location" || true
	$(call TIER_PIP,.venv-servers/spark-4.2) -e . 2>&1 | grep -v "^WARNING: Location" || true
	@test "$$(.venv-servers/spark-4.2/bin/python -c 'import pyspark; print(pyspark.__version__)')" = "$(KAFKA_SPARK)" && touch $@

.venv-servers/other-python/.installed: pyproject.toml | $(STAMP)
	$(call TIER_VENV,.venv-servers/other-python,$(OTHER_PYTHON))
	$(call TIER_PIP,.venv-servers/other-python) pyspark==$(PYSPARK_PIN) 2>&1 | grep -v "^WARNING: Location" || true
	@.venv-servers/other-python/bin/python -c 'import pyspark' && touch $@

server-venvs: $(SERVER_VENVS)

# The client tier (tests/clients/): sparkscope installed beside an older pyspark client, one venv per line, each
# keeping the pyspark it was given (pip resolves sparkscope's range around it).
CLIENT_LINES := 4.0.5 4.1.4 4.2.1
CLIENT_VENVS := $(foreach v,$(CLIENT_LINES),.venv-clients/$(v)/.installed)
.venv-clients/%/.installed: pyproject.toml | $(STAMP)
	$(call TIER_VENV,.venv-clients/$*,$(PYTHON))
	$(call TIER_PIP,.venv-clients/$*) "pyspark[connect]==$*" 2>&1 | grep -v "^WARNING: Location" || true
	$(call TIER_PIP,.venv-clients/$*) -e . pytest pexpect pyte 2>&1 | grep -v "^WARNING: Location" || true
	@test "$$(.venv-clients/$*/bin/python -c 'import pyspark; print(pyspark.__version__)')" = "$*" && touch $@

client-venvs: $(CLIENT_VENVS)

run: $(STAMP)
	@$(BIN)/sparkscope

# Two pytest workers (pytest-xdist), each with its own sandbox and session server, a test file at a time, on two
# cores: a single worker left them idle 65% of the time while tests waited on the server's batches, two 17% (the tests
# that wait out a frozen network or a killed server). On one checkout (2026-11-29) the main tier took 1,234 s with two
# workers, 1,166 s with two once the tests' JVMs no longer verified bytecode (tests/conftest.py), and 1,062 s with
# three (5% idle); but with three, test_stuck's Ctrl-C on a sort failed once in four runs: no note on the tasks that
# still ran came (most likely, on the loaded cores, they got less than the fifth of a core that the REPL's sample
# counts as computing). The main
# tier's own venv is built first, alone, and the venvs of the other tiers are built while it runs (pip is half disk).
# After it, three lanes side by side, each in its own pytest process: the client tier (one line after the other), the
# foreign-server tier, and the cluster tier (a standalone master, two workers and the Connect server) then the Kafka
# tier. Run one after the other the cluster tier kept the cores 56% idle, and the two lanes after it 33%. Each lane
# writes its log (.test-logs/), shown when the lanes have ended. (Running those tiers beside the main one took
# 3 minutes off a clean clone's run, but with four JVMs on two cores two timing-bound tests failed: CONTRIBUTING.md.)
# PYCACHE: pip compiles what it installs, but not the sources of an editable install, and where PYTHONDONTWRITEBYTECODE
# is set (this machine's environment) Python never writes their .pyc files: each of the suite's 650 Python processes
# compiled sparkscope's modules again (a REPL's imports took 1.70 s of CPU instead of 1.46 s). compileall writes them
# once; Python checks each against its source, so an edited file is compiled again, in memory.
TEST_WORKERS ?= 2
test:
	@$(MAKE) --no-print-directory $(TESTSTAMP)
	@$(BIN)/sparkscope server check-java
	@$(BIN)/python -m compileall -q sparkscope >/dev/null  # the editable install's sources (PYCACHE above)
	@mkdir -p .test-logs; rm -f .test-logs/venvs.log .test-logs/clients.log .test-logs/servers.log .test-logs/cluster-kafka.log; \
	echo "The venvs of the server, client and Kafka tiers are built beside the main tier (.test-logs/venvs.log)"; \
	$(MAKE) --no-print-directory -j4 $(SERVER_VENVS) $(CLIENT_VENVS) > .test-logs/venvs.log 2>&1 & venvs=$$!; \
	status=0; $(BIN)/python -m pytest tests examples/tests -q -n $(TEST_WORKERS) --dist loadfile --durations=20 --ignore=tests/cluster --ignore=tests/servers --ignore=tests/clients --ignore=tests/kafka --ignore=tests/e2e/test_guide.py || status=1; \
	wait $$venvs || { echo "== building the venvs of the other tiers failed"; cat .test-logs/venvs.log; exit 1; }; \
	echo "The client tier, the foreign-server tier, and the cluster tier then the Kafka tier run side by side (.test-logs/)"; \
	$(MAKE) --no-print-directory test-clients > .test-logs/clients.log 2>&1 & clients=$$!; \
	$(BIN)/python -m pytest tests/servers -q --durations=5 > .test-logs/servers.log 2>&1 & servers=$$!; \
	{ lane=0; echo "== the cluster tier"; $(BIN)/python -m pytest tests/cluster -q || lane=1; \
	  $(MAKE) --no-print-directory test-kafka || lane=1; exit $$lane; } > .test-logs/cluster-kafka.log 2>&1 & cluster=$$!; \
	wait $$clients || status=1; cat .test-logs/clients.log; \
	wait $$cluster || status=1; cat .test-logs/cluster-kafka.log; \
	wait $$servers || status=1; echo "== the foreign-server tier"; cat .test-logs/servers.log; exit $$status

# Spark's own Kafka connector, fetched by `sparkscope server start --kafka` on a Spark 4.2 server, against tansu
test-kafka: $(TESTSTAMP) .venv-servers/spark-4.2/.installed
	@echo "== the Kafka tier: Spark's connector on pyspark $(KAFKA_SPARK)"
	$(BIN)/python -m pytest tests/kafka -q -p no:cacheprovider

test-clients: $(TESTSTAMP) $(CLIENT_VENVS)
	@for v in $(CLIENT_LINES); do echo "== the client tier: pyspark $$v"; \
	  SPARKSCOPE_CLIENT_PYSPARK=$$v .venv-clients/$$v/bin/python -m pytest tests/clients -q -p no:cacheprovider || exit 1; done

test-servers: $(TESTSTAMP) $(SERVER_VENVS)
	$(BIN)/python -m pytest tests/servers -q --durations=5

test-cluster: $(TESTSTAMP)
	$(BIN)/python -m pytest tests/cluster -q

# Spark's Structured Streaming Programming Guide, block by block, against plain pyspark (tests/corpus/guide.py).
# Its text is not kept here: name the docs/ folder of an apache/spark checkout. make test skips it without one.
test-guide: $(TESTSTAMP)
	@test -n "$(SPARKSCOPE_SPARK_DOCS)" || { echo "Set SPARKSCOPE_SPARK_DOCS to the docs/ folder of an apache/spark checkout"; exit 2; }
	SPARKSCOPE_SPARK_DOCS="$(SPARKSCOPE_SPARK_DOCS)" $(BIN)/python -m pytest tests/e2e/test_guide.py -q -rs

unit: $(TESTSTAMP)
	$(BIN)/python -m pytest tests/unit -q

# the inner loop: lint and every test that needs no Spark server (CONTRIBUTING.md says when to run which)
check: $(TESTSTAMP)
	@$(MAKE) --no-print-directory lint
	$(BIN)/python -m pytest tests/unit -q --ignore=tests/unit/test_house.py --ignore=tests/unit/test_layering.py --ignore=tests/unit/test_public_api.py --ignore=tests/unit/test_docs.py

bench: $(TESTSTAMP)
	$(BIN)/python benchmarks/run_all.py

# 20 queries for SOAK_MINUTES with :watch open; CSV and PNG in benchmarks/results/ (not part of bench)
soak: $(BENCHSTAMP)
	$(BIN)/python benchmarks/soak.py $(SOAK_MINUTES)

lint: $(TESTSTAMP)
	$(BIN)/ruff check sparkscope tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/python -m pytest tests/unit/test_house.py tests/unit/test_layering.py tests/unit/test_public_api.py tests/unit/test_docs.py -q

# the command table of docs/repl.md, from the registry (make test fails when they drift apart)
docs: $(STAMP)
	$(BIN)/python scripts/command_reference.py
	$(BIN)/python scripts/api_reference.py
	$(BIN)/python scripts/module_map.py

# sparkscope/jars/sparkscope.jar from its source (needs a JDK; the jar is committed, users need only a JRE)
jar: $(STAMP)
	$(BIN)/python scripts/build_jar.py

server-stop: $(STAMP)
	$(BIN)/sparkscope server stop

clean:
	rm -rf $(VENV) .venv-servers .venv-clients build *.egg-info
