"""The client tier: sparkscope beside a project's own pyspark, one venv per client line (4.0, 4.1 and 4.2, the
Makefile's .venv-clients/), each running this folder with its own Python. The embedded server the session fixture
starts is the one that client's own wheel carries (tests/conftest.py's `server` fixture, run by that Python)."""

from __future__ import annotations

from tests.e2e.conftest import repl  # noqa: F401 - the REPL in a pty, on `remote_url`
