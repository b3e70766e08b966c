"""Queries survive the server: three cycles of kill -9 of the server mid-stream, a new server, and the
query brought back from the catalog (server start --restore, ss.restart, :restart --lost). A windowed
count over a file source into a parquet sink must end with every expected row once: 0 missing, 0 repeated."""

from __future__ import annotations

import io
import json
import re
import os
import signal
from pathlib import Path

import pytest

import sparkscope
from sparkscope.server.ports import free_port, wait_until_free
from sparkscope.server.local import LocalServer
from sparkscope.client.session import Session
from sparkscope.core.executor import Executor
from tests.helpers import run_sparkscope, wait_for

CYCLES = 3  # one of each way back: server start --restore, ss.restart, :restart --lost


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
    info = local.running()
    os.kill(info.pid, signal.SIGKILL)
    wait_for(lambda: not _alive(info.pid), what="the killed server to be gone")
    # A killed JVM's main thread shows as a zombie while its other threads still exit; its listening socket
    # closes with the last of them. A restart on the same port before that finds the port taken.
    assert wait_until_free(info.port, timeout=30), "the killed server's port is still taken"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie is gone for us
    except OSError:
        return False


def test_three_kills_of_the_server_lose_and_repeat_nothing(durable, tmp_path):
    local, port, home = durable
    url = f"sc://localhost:{port}"
    events, out = tmp_path / "events", tmp_path / "out"
    events.mkdir()
    ss = sparkscope.connect(url)
    watcher = Executor(out=io.StringIO(), err=io.StringIO(), interactive=True)  # a REPL open during the kill
    watcher.holder.set_session(ss)
    watcher.live()
    query = start_query(ss, events, out)
    extras = [ss.start(ss.source.rate(5), f"extra_{i}").name for i in range(3)]  # bounded sinks, restored at once
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
            running = ["durable", *extras] if cycle == 0 else ["durable"]
            said = restored.stdout.splitlines()
            assert [re.match(r"Restarted (\w+) \(id [0-9a-f]{8}\) ", line).group(1)
                    for line in said if line.startswith("Restarted ")] == running, restored.stdout
            assert said[-1].startswith("In session ") and said[-1].endswith(" --reattach"), restored.stdout
            ss = Session.reattach(sparkscope.client.connection.remote.local_target(port, token=local.running().token))
            query = ss.streams.get("durable")
            for name in extras if cycle == 0 else []:  # each of the bounded sinks started together runs
                listed = {info.name: (info.state, info.error) for info in ss.streams.queries(catalogued=True)}
                assert listed.get(name, ("?", None))[0] == "active", (name, listed)
                extra = ss.streams.get(name)
                wait_for(lambda q=extra: q.progress is not None and q.progress.input_rows > 0, timeout=120,
                         what=f"{name}'s rows after the restore")
                extra.stop()
        else:
            started = run_sparkscope("server", "start", "--port", str(port))
            assert started.returncode == 0, started.stderr
            ss = sparkscope.connect(url)
            if cycle % 3 == 1:
                query = ss.restart("durable")
            else:
                shell = Executor(out=io.StringIO(), err=io.StringIO())
                shell.holder.set_session(ss)
                assert shell.run(":restart --lost"), shell.err.getvalue()
                assert shell.out.getvalue().startswith("Restarted durable (id ")
                assert "from its checkpoint" in shell.out.getvalue()
                query = ss.streams.get("durable")
        assert query.checkpoint is not None
        query.process_all_available()
    write_events(events, CYCLES, 23, 1)  # moves the watermark past every hour written above
    query.process_all_available()
    query.stop()
    rows = ss.spark.read.parquet(str(out)).collect()
    got = [(r["hour"].strftime("%H:%M"), r["count"]) for r in rows]
    assert sorted(got) == sorted(expected.items()), got  # every window once: 0 missing, 0 duplicated
    ss.close()


def test_seed_004_on_kafka_survives_a_kill_of_the_server_without_a_record_lost_or_counted_twice(
        durable, tmp_path, kafka_broker):
    """Per-user running totals (applyInPandasWithState) over a Kafka topic into a parquet sink; the server is
    killed mid-stream and started again with --restore. Every total ends exact: each record counted once."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    def running_total(key, batches, state):  # defined here: shipped by value to the server's Python
        import pandas as pd

        total, count = state.get if state.exists else (0, 0)
        for batch in batches:
            total, count = total + int(batch["amount"].sum()), count + len(batch)
        state.update((total, count))
        yield pd.DataFrame({"userId": [key[0]], "total": [total], "transactions": [count]})

    local, port, _ = durable
    topic, out = f"tx_{tmp_path.name[-8:]}", tmp_path / "totals"
    kafka_broker.create(topic, 2)
    ss = sparkscope.connect(f"sc://localhost:{port}")
    transactions = ss.source.kafka(kafka_broker.bootstrap, subscribe=topic, starting_offsets="earliest",
                                   max_offsets_per_trigger=7) \
        .select(F.from_json(F.col("value").cast("string"), "userId STRING, amount INT").alias("t")).select("t.*")
    totals = transactions.groupBy("userId").applyInPandasWithState(
        running_total, "userId STRING, total BIGINT, transactions INT", "total BIGINT, count INT", "append",
        GroupStateTimeout.NoTimeout)
    ss.start(totals, "kafka_totals", sink="parquet", path=str(out), mode="append", trigger="200 milliseconds")
    sent = [(f"u{i % 4}", i) for i in range(60)]
    kafka_broker.produce(topic, [json.dumps({"userId": user, "amount": amount}) for user, amount in sent[:40]])

    def rows():
        return [tuple(r) for r in ss.spark.read.schema("userId STRING, total BIGINT, transactions INT")
                .parquet(str(out)).collect()]

    wait_for(lambda: len(rows()) >= 4, 60, what="the first batches")  # mid-stream: 7 records a batch
    kill_server(local)
    ss.close(stop_queries=False)
    kafka_broker.produce(topic, [json.dumps({"userId": user, "amount": amount}) for user, amount in sent[40:]])
    restored = run_sparkscope("server", "start", "--port", str(port), "--restore")
    assert restored.returncode == 0, restored.stderr
    assert re.search(r"^Restarted kafka_totals \(id [0-9a-f]{8}\) from its checkpoint", restored.stdout, re.M)
    ss = Session.reattach(sparkscope.client.connection.remote.local_target(port, token=local.running().token))
    expected = {user: (sum(a for u, a in sent if u == user), sum(1 for u, _ in sent if u == user))
                for user in ("u0", "u1", "u2", "u3")}

    def newest() -> dict:
        best: dict = {}
        for user, total, count in rows():
            if count > best.get(user, (0, 0))[1]:
                best[user] = (total, count)
        return best

    wait_for(lambda: newest() == expected, 90, what=f"the totals {expected}")
    counts = [(user, count) for user, _, count in rows()]
    assert len(counts) == len(set(counts)), "a batch was written twice"  # each (user, count) once
    ss.streams.get("kafka_totals").stop()
    ss.close()


def test_the_state_of_a_query_whose_server_was_killed_is_read_from_its_checkpoint(durable, tmp_path):
    """Post-mortem: what was in the state when the server died, from the catalog's record of the query."""
    from pyspark.sql import functions as F

    local, port, _ = durable
    url = f"sc://localhost:{port}"
    events = tmp_path / "events"
    events.mkdir()
    write_events(events, 0, 10, 3)
    write_events(events, 1, 11, 2)
    ss = sparkscope.connect(url)
    counts = ss.source.files("json", str(events), schema="time TIMESTAMP, action STRING") \
        .groupBy(F.window("time", "1 hour")).count()
    ss.start(counts, "post_mortem").process_all_available()
    kill_server(local)
    ss.close(stop_queries=False)
    started = run_sparkscope("server", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    after = sparkscope.connect(url)
    try:
        shell = Executor(out=io.StringIO(), err=io.StringIO())
        shell.holder.set_session(after)
        assert shell.run(":state post_mortem"), shell.err.getvalue()
        table = shell.out.getvalue()
        assert "(2 rows of post_mortem's state)" in table
        got = sorted((r["window"]["start"].strftime("%H:%M"), r["count"]) for r in after.state("post_mortem").collect())
        assert got == [("10:00", 3), ("11:00", 2)]
    finally:
        after.close()
