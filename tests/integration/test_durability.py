"""Queries survive the server: five cycles of kill -9 of the server mid-stream, a new server, and the
query brought back from the catalog (server start --restore, ss.restart, :restart --lost). A windowed
count over a file source into a parquet sink must end with every expected row once: 0 missing, 0 repeated."""

from __future__ import annotations

import io
import json
import os
import signal
from pathlib import Path

import pytest

import sparkscope
from sparkscope.client.processes import free_port
from sparkscope.client.server import LocalServer
from sparkscope.client.session import Session
from sparkscope.repl.executor import Executor
from tests.helpers import run_sparkscope, wait_for

CYCLES = 5


@pytest.fixture(scope="module")
def durable(tmp_path_factory):
    """A server of its own (it gets killed), in a state dir of its own: the catalog and the server's
    token live there, as they would for a user."""
    home = tmp_path_factory.mktemp("durable")
    port = free_port()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(home))
        local = LocalServer(home / "sparkscope")
        try:  # stopped also when the start itself failed or timed out half way
            started = run_sparkscope("server", "start", "--port", str(port))
            assert started.returncode == 0, started.stderr
            yield local, port, home
        finally:
            local.stop(grace=10)


def write_events(folder, index: int, hour: int, count: int) -> None:
    tmp = folder.parent / f".events-{index}.json"
    tmp.write_text("".join(json.dumps({"time": f"2024-01-01 {hour:02d}:{minute:02d}:00", "action": "e"}) + "\n"
                           for minute in range(count)))
    tmp.rename(folder / f"{index}.json")  # whole, so the file source reads it once


def start_query(ss, events, out):
    from pyspark.sql import functions as F

    df = (ss.source.files("json", str(events), schema="time TIMESTAMP, action STRING", max_files_per_trigger=1)
          .withWatermark("time", "1 hour").groupBy(F.window("time", "1 hour"), "action").count()
          .selectExpr("window.start AS hour", "action", "count"))
    return ss.start(df, "durable", sink="parquet", path=str(out), trigger="500 milliseconds")


def kill_server(local: LocalServer) -> None:
    pid = local.running().pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not _alive(pid), what="the killed server to be gone")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie is gone for us
    except OSError:
        return False


def test_five_kills_of_the_server_lose_and_repeat_nothing(durable, tmp_path):
    local, port, home = durable
    url = f"sc://localhost:{port}"
    events, out = tmp_path / "events", tmp_path / "out"
    events.mkdir()
    ss = sparkscope.connect(url)
    watcher = Executor(out=io.StringIO(), err=io.StringIO(), interactive=True)  # a REPL open during the kill
    watcher.set_session(ss)
    watcher.live()
    query = start_query(ss, events, out)
    expected = {}
    for cycle in range(CYCLES):
        hour, count = 10 + cycle, 2 + cycle
        expected[f"{hour:02d}:00"] = count
        write_events(events, cycle, hour, count)
        kill_server(local)  # mid-stream: the batch for this file may be running, or not yet started
        if cycle == 0:
            wait_for(lambda: "went away" in watcher.out.getvalue(), timeout=30, what="the REPL's notice")
            line = next(ln for ln in watcher.out.getvalue().splitlines() if "went away" in ln)
            assert line == (f"note: The server at {url} went away, and its queries stopped with it. "
                            "When it is back: :connect, then :restart --lost")
        ss.close(stop_queries=False)  # the dead server's session: let go of it (deadlines keep this short)
        if cycle % 3 == 0:  # the server and its queries back in one command
            restored = run_sparkscope("server", "start", "--port", str(port), "--restore")
            assert restored.returncode == 0, restored.stderr
            assert "Restored durable from their checkpoints in session " in restored.stdout
            ss = Session.reattach(sparkscope.client.remote.local_target(port, token=local.running().token))
            query = ss.query("durable")
        else:
            started = run_sparkscope("server", "start", "--port", str(port))
            assert started.returncode == 0, started.stderr
            ss = sparkscope.connect(url)
            if cycle % 3 == 1:
                query = ss.restart("durable")
            else:
                shell = Executor(out=io.StringIO(), err=io.StringIO())
                shell.set_session(ss)
                assert shell.run(":restart --lost"), shell.err.getvalue()
                assert shell.out.getvalue().startswith("Restarted durable (id ")
                assert "from its checkpoint" in shell.out.getvalue()
                query = ss.query("durable")
        assert query.checkpoint is not None
        query.process_all_available()
    write_events(events, CYCLES, 23, 1)  # moves the watermark past every hour written above
    query.process_all_available()
    query.stop()
    rows = ss.spark.read.parquet(str(out)).collect()
    got = [(r["hour"].strftime("%H:%M"), r["count"]) for r in rows]
    assert sorted(got) == sorted(expected.items()), got  # every window once: 0 missing, 0 duplicated
    ss.close()
