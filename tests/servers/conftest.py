"""The tier against servers that are not sparkscope's own (tests/foreign_server.py): each test runs against a
bare server (the official image's Python) and an older one (Spark 4.0, its Python made from
server-config/requirements.txt). One server runs at a time: pytest finishes every test of one before it starts
the other."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import repl  # noqa: F401 - the REPL in a pty, on `remote_url`
from tests.foreign_server import start

SERVERS = ("bare", "spark-4.0")


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
def bare(foreign) -> bool:
    """Whether this is the bare server (its Python has none of pyspark's Connect extras)."""
    return foreign.name == "bare"
