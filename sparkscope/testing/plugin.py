"""sparkscope's pytest plugin (registered through the pytest11 entry point, so a project with sparkscope installed
has it): the `sparkscope_session` fixture.

One Spark Connect server for the whole test session: an embedded one, started from the project's own pyspark in a
temporary state dir on a free port and stopped (with everything it started) at the end, or the server
`--sparkscope-remote sc://host:port` (or SPARKSCOPE_TEST_REMOTE) names. One sparkscope session on it, its
spark.sql.shuffle.partitions small (a stateful test query on a few rows would otherwise plan 200 partitions a
batch). Each test gets that session; the queries it started are stopped after it, pass or fail, and the memory
sources it fed are dropped.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

REMOTE_OPTION = "--sparkscope-remote"
REMOTE_ENV = "SPARKSCOPE_TEST_REMOTE"
SHUFFLE_PARTITIONS = "2"


def pytest_addoption(parser: Any) -> None:
    parser.getgroup("sparkscope").addoption(
        REMOTE_OPTION, default=None, metavar="URL",
        help=f"run sparkscope_session's tests on this Spark Connect server (sc://host:port/;token=…) instead of an "
             f"embedded one ({REMOTE_ENV} too)")


@pytest.fixture(scope="session")
def sparkscope_server_url(request: Any, tmp_path_factory: Any) -> Iterator[str]:
    """The URL of the test session's server: the one given, or an embedded one started now and stopped at the end."""
    given = request.config.getoption(REMOTE_OPTION) or os.environ.get(REMOTE_ENV)
    if given:
        yield given
        return
    from ..server.local import LocalServer
    from ..server.ports import free_port

    server = LocalServer(tmp_path_factory.mktemp("sparkscope-server"))
    info = server.start(port=free_port(), conf={"spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS})
    try:
        yield f"sc://localhost:{info.port}" + (f"/;token={info.token}" if info.token else "")
    finally:
        server.stop(grace=15)


@pytest.fixture(scope="session")
def _sparkscope_connection(sparkscope_server_url: str) -> Iterator[Any]:
    import sparkscope

    session = sparkscope.connect(sparkscope_server_url)
    with contextlib.suppress(Exception):  # a server that refuses the conf still runs the tests, more slowly
        session.spark.conf.set("spark.sql.shuffle.partitions", SHUFFLE_PARTITIONS)
    yield session
    session.close()


@pytest.fixture
def sparkscope_session(_sparkscope_connection: Any) -> Iterator[Any]:
    """A sparkscope Session (`ss`) on the test session's server; what the test started is stopped after it."""
    session = _sparkscope_connection
    fed_before = len(session.source.fed)
    try:
        yield session
    finally:
        with contextlib.suppress(Exception):
            session.streams.stop_all()
        for source in session.source.fed[fed_before:]:
            with contextlib.suppress(Exception):
                source.drop()
        del session.source.fed[fed_before:]
