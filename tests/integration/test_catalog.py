"""The query catalog against a real server: restart after stop, after failure, from another process;
plans that cannot replay; the catalog surviving a client killed mid-write; forgetting."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import sparkscope
from sparkscope.client.catalog.records import Catalog
from sparkscope.client.errors import ConfigError, UnsupportedOperation


def write_events(folder, index: int, rows: list[tuple[str, str]]) -> None:
    """One JSON file of (time, action) events, written whole then renamed in (a file source reads it once)."""
    tmp = folder.parent / f".{folder.name}-{index}.json"
    tmp.write_text("".join(json.dumps({"time": t, "action": a}) + "\n" for t, a in rows))
    tmp.rename(folder / f"{index}.json")


def windowed_counts(ss, folder):
    from pyspark.sql import functions as F

    events = ss.source.files("json", str(folder), schema="time TIMESTAMP, action STRING", max_files_per_trigger=1)
    return (events.withWatermark("time", "1 hour")
            .groupBy(F.window("time", "1 hour"), "action").count()
            .selectExpr("window.start AS hour", "action", "count"))


def sink_rows(ss, path) -> list[tuple]:
    rows = ss.spark.read.parquet(str(path)).orderBy("hour", "action").collect()
    return [(r["hour"].strftime("%H:%M"), r["action"], r["count"]) for r in rows]


def test_a_stopped_query_restarts_from_its_checkpoint_with_nothing_lost_or_repeated(ss, data_dir, tmp_path):
    events, out = data_dir / "events", tmp_path / "out"
    events.mkdir()
    write_events(events, 0, [("2024-01-01 10:05:00", "open"), ("2024-01-01 10:20:00", "open")])
    write_events(events, 1, [("2024-01-01 12:30:00", "close")])  # the watermark passes 11:00: 10:00 is final
    query = ss.start(windowed_counts(ss, events), "cat_counts", sink="parquet", path=str(out))
    query.process_all_available()
    query.stop()
    assert sink_rows(ss, out) == [("10:00", "open", 2)]
    record = Catalog().get(ss.url, "cat_counts")
    assert record.state == "stopped" and record.restartable and record.checkpoint == query.checkpoint
    assert record.last_batch is not None and record.last_batch >= 1

    write_events(events, 2, [("2024-01-01 12:40:00", "close"), ("2024-01-01 14:10:00", "open")])
    again = ss.restart("cat_counts")
    assert again.checkpoint == query.checkpoint and again.sink == "parquet"
    again.process_all_available()
    assert sink_rows(ss, out) == [("10:00", "open", 2), ("12:00", "close", 2)]  # each window once
    with pytest.raises(ConfigError) as err:
        ss.restart("cat_counts")
    assert str(err.value) == f"cat_counts is already running (id {again.id[:8]}). Nothing was changed."
    again.stop()


def cut_off_first_batch(checkpoint: str) -> None:
    """What a server killed while writing a query's first offsets leaves (seen after kill -9 in test_durability):
    Spark's unfinished `.0.<uuid>.tmp` and its checksum, never renamed to `0`."""
    offsets = Path(checkpoint.removeprefix("file:")) / "offsets"
    offsets.mkdir(parents=True, exist_ok=True)
    unfinished = f".0.{uuid.uuid4()}.tmp"
    (offsets / unfinished).write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n')
    (offsets / f".{unfinished}.crc").write_bytes(b"crc\x00\x00\x00\x00\x00\x00\x00\x00")


def test_a_query_whose_first_batch_was_cut_off_restarts_at_batch_0_and_loses_nothing(ss, data_dir, tmp_path):
    events, out = data_dir / "cut_events", tmp_path / "out"
    events.mkdir()
    query = ss.start(windowed_counts(ss, events), "cat_cut_off", sink="parquet", path=str(out))
    query.process_all_available()  # no file yet: no batch, nothing in offsets/
    query.stop()
    cut_off_first_batch(query.checkpoint)
    write_events(events, 0, [("2024-01-01 10:05:00", "open"), ("2024-01-01 12:30:00", "close")])
    again = ss.restart("cat_cut_off")
    again.process_all_available()
    assert again.state == "active", again.exception
    assert [p.batch_id for p in again.history][:1] == [0]
    write_events(events, 1, [("2024-01-01 14:10:00", "open")])  # moves the watermark past 12:00
    again.process_all_available()
    assert sink_rows(ss, out) == [("10:00", "open", 1), ("12:00", "close", 1)]
    again.stop()


def test_a_restart_leaves_alone_a_first_batch_that_a_query_running_on_its_checkpoint_may_be_writing(ss, data_dir):
    """Found in CI: a restart removed the `.0.<uuid>.tmp` of another query then writing its first batch on the same
    checkpoint, and that query failed with FileNotFoundException instead of being stopped by Spark as it says."""
    events = data_dir / "writing_events"
    events.mkdir()
    first = ss.start(windowed_counts(ss, events), "cat_writing_a", sink="memory")
    first.process_all_available()
    first.stop()
    other = ss.start(windowed_counts(ss, events), "cat_writing_b", sink="memory", checkpoint=first.checkpoint)
    other.process_all_available()  # no file yet: no batch; what follows stands for its first batch being written
    cut_off_first_batch(first.checkpoint)
    offsets = Path(first.checkpoint.removeprefix("file:")) / "offsets"
    writing = sorted(entry.name for entry in offsets.iterdir())
    again = ss.restart("cat_writing_a")  # Spark stops cat_writing_b, as the restart's note says
    assert any("Spark stopped query cat_writing_b" in note for note in again.notes), again.notes
    assert sorted(entry.name for entry in offsets.iterdir()) == writing
    again.stop()


def test_a_cut_off_first_batch_in_a_checkpoint_sparkscope_cannot_reach_is_one_line_that_says_what_to_do(ss, tmp_path):
    checkpoint = tmp_path / "theirs"  # a start never clears a checkpoint given to it: only a restart does
    cut_off_first_batch(str(checkpoint))
    query = ss.start(ss.source.rate(5), "cat_cut_off_theirs", sink="parquet", path=str(tmp_path / "out"),
                     checkpoint=str(checkpoint))
    with pytest.raises(sparkscope.QueryFailed) as failed:
        query.await_termination(120)
    assert str(query.exception) == (
        f"The checkpoint file:{checkpoint} holds no whole batch, yet files Spark does not expect (a first batch "
        "cut off as the server stopped); start the query over with a new checkpoint (ss.restart(name, fresh=True))"), failed.value


def test_a_failed_query_is_recorded_and_restarts(ss):
    doomed = ss.start(ss.source.rate(5).selectExpr("assert_true(value < 3) AS ok"), "cat_doomed", sink="memory")
    with pytest.raises(sparkscope.QueryFailed):
        doomed.await_termination(120)
    assert doomed.state == "failed"
    record = Catalog().get(ss.url, "cat_doomed")
    assert record.state == "failed" and "is not true" in record.error
    again = ss.restart("cat_doomed")  # the same plan fails again, as it should
    assert again.checkpoint != doomed.checkpoint  # a memory sink in append mode cannot resume (Spark's rule)
    with pytest.raises(sparkscope.QueryFailed):
        again.await_termination(120)


def test_a_plan_that_cannot_replay_says_why_when_it_starts(ss, caplog):
    local = ss.spark.createDataFrame([(1, "a")], "id INT, v STRING")
    rate = ss.source.rate(1).crossJoin(local)
    with caplog.at_level("DEBUG", logger="sparkscope"):
        query = ss.start(rate, "cat_local")
    assert query.restart_note == "it reads data held in this session (a DataFrame built from a Python list or pandas)"
    # the query says it (the REPL shows it as a note); the log only at debug, so the REPL says it once
    assert [r.levelname for r in caplog.records if r.getMessage() == (
        f"cat_local cannot be restarted from the catalog: {query.restart_note}")] == ["DEBUG"]
    query.stop()
    with pytest.raises(UnsupportedOperation) as err:
        ss.restart("cat_local")
    assert str(err.value).startswith("cat_local cannot be restarted: it reads data held in this session")

    ss.source.rate(1).createOrReplaceTempView("cat_view")
    for name, df in (("cat_viewed", ss.spark.table("cat_view")), ("cat_sql", ss.spark.sql("SELECT * FROM cat_view"))):
        viewed = ss.start(df, name)
        assert viewed.restart_note == "it reads the temporary view cat_view, which lives only in this session"
        viewed.stop()


def test_another_process_restarts_what_this_one_started(ss, remote_url):
    from pyspark.sql import functions as F

    double = F.udf(lambda v: v * 2, "long")  # a Python UDF travels in the plan (pickled): it replays
    ss.start(ss.source.rate(5).select(double("value").alias("twice")), "cat_shared").stop()
    script = textwrap.dedent("""
        import sys, sparkscope
        with sparkscope.connect(sys.argv[1]) as ss:
            import time
            q = ss.restart("cat_shared")
            deadline = time.monotonic() + 60
            while len(ss.peek("cat_shared", 3).rows) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)  # polling for the UDF's first rows
            rows = ss.peek("cat_shared", 3, order_by="twice").rows
            assert [r[0] for r in rows] == [0, 2, 4], (rows, q.state, q.exception, q.progress)
            print("restarted", q.name, q.state, q.checkpoint)
            q.stop()
    """)
    out = subprocess.run([sys.executable, "-c", script, remote_url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    record = Catalog().get(ss.url, "cat_shared")
    assert out.stdout.strip() == f"restarted cat_shared active {record.checkpoint}"
    assert record.state == "stopped"
    ss.streams.reset_terminated()  # this session forgets it; the catalog does not
    assert "cat_shared" not in {info.name for info in ss.streams.queries()}
    shared = next(info for info in ss.streams.queries(catalogued=True) if info.name == "cat_shared")
    assert (shared.state, shared.checkpoint) == ("stopped", record.checkpoint)


def test_the_catalog_stays_readable_when_a_writer_is_killed(tmp_path):
    path = tmp_path / "catalog.sqlite3"
    writer = textwrap.dedent("""
        import sys
        from pathlib import Path
        from sparkscope.client.catalog.records import Catalog
        catalog = Catalog(Path(sys.argv[1]))
        i = 0
        while True:
            catalog.record_start("sc://h:1", f"q{i % 50}", query_id=str(i), session_id="s", plan=b"x" * 4096,
                                 sink="memory", mode="append", trigger="default", options={}, path=None,
                                 table_name=None, checkpoint=f"/c/{i}", restartable=True, reason=None)
            if i == 200:
                print("writing", flush=True)
            i += 1
    """)
    proc = subprocess.Popen([sys.executable, "-c", writer, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"  # it is mid-stream of writes now
    finally:
        proc.kill()
        proc.wait()
    records = Catalog(path).records()
    assert 1 <= len(records) <= 50
    assert all(r.plan == b"x" * 4096 and r.checkpoint == f"/c/{r.query_id}" for r in records)
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_forget_removes_the_record_and_keeps_the_checkpoint(ss):
    query = ss.start(ss.source.rate(5), "cat_forget")
    query.stop()
    record = ss.streams.forget("cat_forget")
    assert record.checkpoint == query.checkpoint
    assert Catalog().get(ss.url, "cat_forget") is None


def test_the_checkpoints_command_lists_owners_and_prunes_nothing_young(ss):
    from tests.helpers import run_sparkscope

    query = ss.start(ss.source.rate(5), "cat_ckpt")
    query.stop()
    out = run_sparkscope("checkpoints")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith(f"| {query.checkpoint.rsplit('/', 1)[1]}"))
    assert re.search(r"\| cat_ckpt \(stopped\)\s+\| yes\s+\| sparkscope \|$", row), row  # the bounded sink resumes
    pruned = run_sparkscope("checkpoints", "prune", "--older-than", "1h")
    assert pruned.returncode == 0 and "Deleted 0 checkpoints, 0 B freed" in pruned.stdout
    missing = run_sparkscope("checkpoints", "prune")
    assert (missing.returncode, missing.stderr) == (2, "error: prune needs --older-than AGE. e.g. sparkscope "
                                                       "checkpoints prune --older-than 7d.\n")
