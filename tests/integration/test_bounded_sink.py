"""The default sink of append and update streams keeps the newest rows only (client/queries/bounded_sink.py),
against the real server: what it keeps, in which order, across batches, retries and time; Spark's
memory sink when asked for, with its warning; restart and tail."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from sparkscope.client.errors import ConfigError
from tests.helpers import wait_for


def _files(directory, batches: int, per_batch: int = 10) -> None:
    """One JSON file per batch: batch k holds ids k*per_batch … k*per_batch+per_batch-1 (Spark reads the
    files oldest first, so each gets its own modification time)."""
    start = time.time() - 3600
    for k in range(batches):
        lines = (json.dumps({"id": k * per_batch + i}) for i in range(per_batch))
        path = directory / f"part-{k:03d}.json"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (start + k, start + k))


def _ids(rows) -> list[int]:
    return [row[0] for row in rows.rows]


def _finished(ss, name: str) -> None:
    query = ss.streams.get(name)
    assert query.await_termination(timeout=120), f"{name} did not finish"
    assert query.state == "stopped", query.exception


def test_an_append_stream_keeps_only_the_newest_rows_newest_batch_first(ss, data_dir):
    _files(data_dir, batches=5)
    df = ss.spark.readStream.schema("id LONG").option("maxFilesPerTrigger", 1).json(str(data_dir))
    query = ss.start(df, "newest", keep=25, trigger="available-now")
    assert (query.sink, str(query.keep), query.warning) == ("bounded", "last 25 rows", None)
    _finished(ss, "newest")
    assert query.progress.batch_id == 4  # five batches of ten rows each went through
    everything = ss.peek("newest", n=1000)
    assert everything.columns == ["id"]  # the batch column stays inside
    ids = _ids(everything)
    assert len(ids) == 25
    assert set(ids[:10]) == set(range(40, 50)) and set(ids[10:20]) == set(range(30, 40))
    assert set(ids[20:]) < set(range(20, 30))  # five of the third-newest batch
    assert set(_ids(ss.peek("newest", n=10))) == set(range(40, 50))
    assert _ids(ss.peek("newest", n=3, where="id >= 30", order_by="id")) == [30, 31, 32]  # within what is kept
    # spark.table and SQL see the same rows under the query's name
    assert ss.spark.sql("SELECT count(*) AS n, max(id) AS top FROM newest").collect()[0].asDict() == {
        "n": 25, "top": 49}
    assert [info.keep for info in ss.streams.queries() if info.name == "newest"] == ["last 25 rows"]


def test_a_stateful_query_that_outputs_more_than_is_kept_commits_every_partition(ss, data_dir):
    # Taking only the newest rows must not skip partitions: Spark fails a batch whose state stores did not
    # all commit (STATE_STORE_COMMIT_VALIDATION_FAILED), and the progress would count too few input rows
    _files(data_dir, batches=3, per_batch=50)
    df = ss.spark.readStream.schema("id LONG").option("maxFilesPerTrigger", 1).json(str(data_dir))
    query = ss.start(df.groupBy("id").count(), "many_keys", mode="update", keep=10, trigger="available-now")
    assert (query.sink, query.mode) == ("bounded", "update")
    _finished(ss, "many_keys")
    assert [p.input_rows for p in ss.streams.recent_progress(query, last=10) if p.input_rows] == [50, 50, 50]
    kept = _ids(ss.peek("many_keys", n=100))
    assert len(kept) == 10 and set(kept) < set(range(100, 150))  # ten of the newest batch's keys


def test_the_memory_sink_still_keeps_every_row_and_says_so(ss, data_dir):
    _files(data_dir, batches=5)
    df = ss.spark.readStream.schema("id LONG").option("maxFilesPerTrigger", 1).json(str(data_dir))
    query = ss.start(df, "everything", sink="memory", trigger="available-now")
    assert query.warning == (
        "Spark's memory sink keeps every row of this append-mode stream in the server's memory: reading it slows "
        "as it grows, and the server can run out of memory (the default sink keeps the newest 10,000 rows)")
    _finished(ss, "everything")
    assert query.sink == "memory" and query.keep is None
    assert sorted(_ids(ss.peek("everything", n=1000))) == list(range(50))
    assert ss.spark.table("everything").count() == 50


def test_a_complete_aggregation_goes_to_the_memory_sink_without_a_warning(ss, data_dir):
    _files(data_dir, batches=2)
    df = ss.spark.readStream.schema("id LONG").json(str(data_dir))
    query = ss.start(df.groupBy((df.id % 2).alias("odd")).count(), "parity", trigger="available-now")
    assert (query.sink, query.mode, query.warning) == ("memory", "complete", None)
    _finished(ss, "parity")
    assert ss.peek("parity", order_by="odd").rows == [(0, 10), (1, 10)]


def test_keep_is_only_for_the_bounded_sink(ss, data_dir):
    df = ss.spark.readStream.schema("id LONG").json(str(data_dir))
    with pytest.raises(ConfigError) as err:
        ss.start(df, "wrong", sink="memory", keep=10)
    assert str(err.value) == "Only the bounded sink takes keep, not the memory sink. Leave out the sink, or keep."
    with pytest.raises(ConfigError) as err:
        ss.start(df, "wrong", sink="memory", grace="5m")
    assert str(err.value) == "Only the bounded sink takes grace, not the memory sink. Leave out the sink, or grace."
    with pytest.raises(ConfigError) as err:
        ss.start(df, "wrong", keep="lots")
    assert str(err.value).startswith("'lots' is not what to keep.")
    assert [q.name for q in ss.streams.running()] == []


def test_a_bounded_query_restarts_from_its_checkpoint_with_its_keep_and_its_rows_start_again_from_its_next_batch(
        ss, data_dir):
    _files(data_dir, batches=3)
    df = ss.spark.readStream.schema("id LONG").option("maxFilesPerTrigger", 1).json(str(data_dir))
    query = ss.start(df, "again", keep="1k")
    wait_for(lambda: query.progress and query.progress.batch_id >= 2, what="three batches")
    query.stop()
    (data_dir / "part-100.json").write_text('{"id": 1000}\n')
    restarted = ss.restart("again")
    assert (restarted.sink, str(restarted.keep)) == ("bounded", "last 1,000 rows")
    # the checkpoint says files 0-2 are done: only the new file is read, and nothing twice
    wait_for(lambda: _ids(ss.peek("again")) == [1000], what="the new file's row")
    assert wait_for(lambda: restarted.progress, what="the batch's progress").batch_id == 3


# The ring itself (a retried batch, time, complete mode, partitions): tests/unit/server/test_jar.py, in a JVM.
def test_complete_mode_with_keep_shows_the_latest_result_only(ss, data_dir):
    _files(data_dir, batches=2)
    df = ss.spark.readStream.schema("id LONG").option("maxFilesPerTrigger", 1).json(str(data_dir))
    query = ss.start(df.groupBy((df.id % 2).alias("odd")).count(), "parity_kept", keep=100, trigger="available-now")
    assert (query.sink, query.mode) == ("bounded", "complete")
    _finished(ss, "parity_kept")
    assert ss.peek("parity_kept", order_by="odd").rows == [(0, 10), (1, 10)]  # the second result, not both


def test_rows_older_than_the_time_kept_leave_without_another_batch(ss, data_dir):
    _files(data_dir, batches=1)
    df = ss.spark.readStream.schema("id LONG").json(str(data_dir))
    query = ss.start(df, "brief", keep="2s", trigger="available-now")
    _finished(ss, "brief")
    assert str(query.keep) == "last 2 s, at most 100,000 rows"
    wait_for(lambda: ss.peek("brief").rows == [], what="the rows to pass their two seconds")


def test_the_sink_runs_in_the_server_s_jvm_with_no_python_worker(ss, server):
    """Each bounded query used to hold a foreachBatch Python worker on the server (165 MB); none now."""
    from sparkscope.server.process_tree import spawned_by

    def foreach_batch_workers() -> int:
        return sum("foreach_batch_worker" in p.command for p in spawned_by(Path(server.log).parent))

    before = foreach_batch_workers()
    query = ss.start(ss.spark.readStream.format("rate").option("rowsPerSecond", 5).load(), "no_worker")
    wait_for(lambda: ss.peek("no_worker").rows, what="rows in no_worker")
    assert query.progress is not None and query.progress.sink_rows is not None
    assert foreach_batch_workers() == before


def test_eight_bounded_sink_queries_started_at_once_from_threads_all_run(ss):
    """Eight started together on a busy 2-core machine all failed when each needed a Python worker on the server
    (it had 10 s to connect back); the sink runs in the JVM now, and all eight run."""
    import threading

    ticks = ss.spark.readStream.format("rate").option("rowsPerSecond", 2).load()
    outcomes: dict[str, object] = {}

    def start(name: str) -> None:
        try:
            outcomes[name] = ss.start(ticks, name).sink
        except Exception as exc:  # kept to be shown, all of them, by the assertion below
            outcomes[name] = exc

    names = [f"together_{index}" for index in range(8)]
    threads = [threading.Thread(target=start, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert outcomes == {name: "bounded" for name in names}
    for name in names:  # each writes its rows: its worker runs
        wait_for(lambda name=name: ss.peek(name).rows, timeout=120, what=f"rows of {name}")
    ss.streams.stop_all()
