"""A server that runs out of memory exits (-XX:+ExitOnOutOfMemoryError), and the SDK and the REPL say so in
one line, with what to do, instead of "not reachable". A real server with a small heap, driven into an OOM."""

from __future__ import annotations

import pytest

import sparkscope
from sparkscope.client.errors import ServerOutOfMemory
from sparkscope.server.ports import free_port
from sparkscope.server.local import LocalServer
from tests.helpers import run_sparkscope, wait_for

# One group holding every id: its list outgrows a 512 MiB heap (Spark's smallest driver) at once.
GREEDY = "select size(collect_list(id)) from range(0, 60000000)"
SAID = ("The Spark server ran out of memory (Java heap space) and exited. Start it again with its queries: "
        "sparkscope server start --restore (add --driver-memory 8g for more memory; queries of the memory sink "
        "keep every row).")


@pytest.fixture
def small_server(tmp_path):
    """An embedded server of its own (state under tmp_path) with the smallest heap Spark accepts."""
    state = tmp_path / "state"
    server = LocalServer(state / "sparkscope")
    info = server.start(port=free_port(), driver_memory="512m")
    yield server, info, state
    server.stop(grace=5)


def test_the_sdk_says_the_server_ran_out_of_memory_and_exited(small_server):
    server, info, _ = small_server
    with sparkscope.connect(server_home=server.home) as ss, pytest.raises(ServerOutOfMemory) as err:
        ss.sql(GREEDY)
    assert str(err.value) == SAID
    wait_for(lambda: server.running() is None, 30, what="the server to be gone")


def test_the_repl_says_it_in_one_line(small_server):
    _, info, state = small_server
    result = run_sparkscope("--remote", f"sc://localhost:{info.port}", "-c", f":sql {GREEDY}",
                            env={"XDG_STATE_HOME": str(state)})
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: {SAID}"
