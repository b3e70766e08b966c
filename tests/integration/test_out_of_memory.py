"""A server that runs out of memory exits (-XX:+ExitOnOutOfMemoryError), and the SDK and the REPL say so in
one line, with what to do, instead of "not reachable". A real server with a small heap, driven into an OOM."""

from __future__ import annotations

import re

import pytest

import sparkscope
from sparkscope.client.errors import ServerOutOfMemory
from sparkscope.server.ports import free_port
from sparkscope.server.local import LocalServer
from tests.helpers import run_sparkscope, wait_for

# One group holding every id: its list outgrows a 512 MiB heap (Spark's smallest driver) at once.
GREEDY = "select size(collect_list(id)) from range(0, 60000000)"
SAID = (r"The Spark server ran out of memory \(Java heap space\) and exited at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\. "
        r"Start it again: sparkscope server start --restore \(a query that ran when it died is restored only when "
        r"named: --restore NAME; --driver-memory 8g gives it more memory\)\.")


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
    assert re.fullmatch(SAID, str(err.value)), str(err.value)
    wait_for(lambda: server.running() is None, 30, what="the server to be gone")


def test_the_repl_says_it_in_one_line(small_server):
    _, info, state = small_server
    result = run_sparkscope("--remote", f"sc://localhost:{info.port}", "-c", f":sql {GREEDY}",
                            env={"XDG_STATE_HOME": str(state)})
    assert result.returncode == 1
    assert re.fullmatch(f"error: {SAID}", result.stderr.strip()), result.stderr


def test_after_it_died_status_names_what_ran_and_restore_brings_back_only_what_is_named(small_server):
    """Issue 55 rows 6b, 7, 28: `--restore` restored the query that had killed the server (which died again), the
    hint guessed at a memory sink where only bounded sinks ran, and `server status` said only "not running"."""
    server, info, state = small_server
    env = {"XDG_STATE_HOME": str(state)}
    with sparkscope.connect(server_home=server.home) as ss:
        for name in ("ran_a", "ran_b"):
            ss.start(ss.source.rate(1), name)
        with pytest.raises(ServerOutOfMemory):
            ss.sql(GREEDY)
        ss.close(stop_queries=False)
    wait_for(lambda: server.alive() is None, 30, what="the server to be gone")
    status = run_sparkscope("server", "status", env=env)
    assert status.returncode == 3
    assert re.fullmatch(r"No local server is running: the Spark server ran out of memory \(Java heap space\) and "
                        r"exited at [\d: -]+; these queries ran on it: ran_a \(bounded sink, last 10,000 rows\), "
                        r"ran_b \(bounded sink, last 10,000 rows\)\. Start it again: .*", status.stdout.strip()), (
        status.stdout)
    restored = run_sparkscope("server", "start", "--port", str(info.port), "--restore", "ran_b", env=env)
    assert restored.returncode == 0, restored.stderr
    assert re.search(r"^Restarted ran_b \(id [0-9a-f]{8}\) from its checkpoint", restored.stdout, re.M)
    assert "ran_a" not in restored.stdout
    assert re.fullmatch(r"note: not restored, as they ran when the server ran out of memory: ran_a\. Restore one by "
                        r"name once it cannot take the server down again: \S*sparkscope server start --restore ran_a",
                        restored.stderr.strip().splitlines()[-1]), restored.stderr
