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


# What runs none of the user's Python on the server (the bounded sink and the memory source are the server's JVM):
# the other-python server differs from the bare one only in its Python's minor version, so these run on the bare
# server and on 4.0 only. What runs Python there (a UDF, foreachBatch, sparkscope's Kafka source, the probe that
# :session and server check report, display()) runs on all three.
NO_SERVER_PYTHON = frozenset({
    "test_the_first_session_runs_as_written", "test_the_sdk_example_runs_as_written",
    "test_a_console_sink_prints_its_batches_above_the_prompt", "test_the_default_sink_keeps_at_most_what_it_keeps_on_every_server",
    "test_getorcreate_then_await_termination_ends_with_ctrl_c", "test_state_of_a_query_with_a_checkpoint",
    "test_rows_made_here_reach_every_server", "test_the_stream_test_of_docs_testing_passes_on_this_server",
    "test_an_abandoned_ring_ends_with_its_scratch_checkpoint_and_the_jar_says_its_protocol",
    "test_where_a_user_id_is_a_label_the_jar_still_keeps_names_apart_and_enforces_its_limits",
})


def pytest_collection_modifyitems(config, items):
    left_out = [item for item in items if item.originalname in NO_SERVER_PYTHON and "[other-python]" in item.name]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
