"""The tier against servers that are not sparkscope's own (tests/foreign_server.py): each test runs against a
bare server (the official image's Python), an older one (Spark 4.0, its Python made from
server-config/requirements.txt) and, where this machine has another Python minor version than the client's, a
bare server on that Python. One server runs at a time: pytest finishes every test of one before it starts the
next."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import repl  # noqa: F401 - the REPL in a pty, on `remote_url`
from tests.foreign_server import VENVS, start

SERVERS = ("bare", "spark-4.0", *(("other-python",) if (VENVS / "other-python" / ".installed").exists() else ()))


@pytest.fixture(scope="session", params=SERVERS)
def foreign(request, sandbox):
    conf = {}
    if request.param == "spark-4.0":  # an admin who followed docs/clusters.md gives a checkpoint root
        conf["spark.sql.streaming.checkpointLocation"] = str(sandbox / "spark-4.0-checkpoints")
    server = start(request.param, sandbox / "servers", conf)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def remote_url(foreign) -> str:
    return foreign.url


@pytest.fixture
def kind(foreign) -> str:
    """bare (no pandas or pyarrow), spark-4.0 (everything), other-python (another Python minor version)."""
    return foreign.name
