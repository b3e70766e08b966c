"""What a query remembers, read from its checkpoint with :state, and why a row was dropped with :late: exact
keys and values after known input, on the real server."""

from __future__ import annotations

import io
import json
import re

import pytest
from pyspark.sql import functions as F

from sparkscope.client.errors import UnsupportedOperation
from sparkscope.core.executor import Executor


def write(folder, name: str, rows: list[dict]) -> None:
    folder.mkdir(exist_ok=True)
    tmp = folder.parent / f".{name}"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.rename(folder / name)  # whole, so the file source reads it once


class Shell:
    def __init__(self, ss):
        self.executor = Executor(out=io.StringIO(), err=io.StringIO())
        self.executor.holder.set_session(ss)

    def run(self, line: str) -> tuple[bool, str, str]:
        out, err = self.executor.out, self.executor.err
        start_out, start_err = out.tell(), err.tell()
        ok = self.executor.run(line)
        out.seek(start_out), err.seek(start_err)
        return ok, out.read(), err.read()

    def rows(self, line: str) -> list[list[str]]:
        """The cells of a table the command printed (plain table format)."""
        ok, out, err = self.run(line + " --limit 1000")
        assert ok, err
        return [[cell.strip() for cell in row.strip("|").split("|")] for row in out.splitlines()
                if row.startswith("|") and not row.startswith("|-")]


@pytest.fixture(scope="module")
def shell(ss):
    return Shell(ss)


def events(ss, folder, schema="k STRING, n INT, t TIMESTAMP"):
    return ss.source.files("json", str(folder), schema=schema, max_files_per_trigger=1)


def test_state_of_a_windowed_count_batch_by_batch(ss, shell, tmp_path):
    src = tmp_path / "in"
    write(src, "1.json", [{"k": "a", "t": "2024-01-01 10:01:00"}, {"k": "a", "t": "2024-01-01 10:02:00"},
                          {"k": "b", "t": "2024-01-01 10:03:00"}])
    counts = events(ss, src).withWatermark("t", "1 hour").groupBy(F.window("t", "10 minutes"), "k").count()
    query = ss.start(counts, "windowed", mode="update")
    query.process_all_available()
    write(src, "2.json", [{"k": "a", "t": "2024-01-01 10:04:00"}, {"k": "c", "t": "2024-01-01 10:15:00"}])
    query.process_all_available()
    write(src, "3.json", [{"k": "b", "t": "2024-01-01 10:05:00"}])
    query.process_all_available()
    query.stop()
    state = shell.rows(":state windowed")
    assert state[0][:3] == ["window", "k", "count"]
    got = sorted((row[1], row[2], row[0][:40]) for row in state[1:])
    assert [(k, n) for k, n, _ in got] == [("a", "3"), ("b", "2"), ("c", "1")]
    sdk = sorted((r["k"], r["count"]) for r in ss.state("windowed").collect())
    assert sdk == [("a", 3), ("b", 2), ("c", 1)]
    assert sorted((r["k"], r["count"]) for r in ss.state("windowed", batch=0).collect()) == [("a", 2), ("b", 1)]
    first, second, third = [p.batch_id for p in query.history if p.input_rows]  # no-data batches between them
    assert first == 0
    changes = shell.rows(f":state windowed --changes --from {second} --to {third}")
    assert changes[0] == ["batch_id", "change_type", "window", "k", "old_count", "new_count"]
    assert [(r[0], r[1], r[3], r[4], r[5]) for r in changes[1:]] == [
        (str(second), "update", "a", "2", "3"), (str(second), "update", "c", "NULL", "1"),
        (str(third), "update", "b", "1", "2")]
    # issue 55 row 38: batch 0's inserts were left out, and `--from 0 --to 0` spoke of a --from 1 nobody typed
    from_zero = shell.rows(":state windowed --changes --from 0 --to 0")
    assert sorted((r[0], r[1], r[3], r[4], r[5]) for r in from_zero[1:]) == [
        ("0", "update", "a", "NULL", "2"), ("0", "update", "b", "NULL", "1")]
    ok, _, err = shell.run(":state windowed --changes --from 2 --to 1")
    assert not ok and err.startswith("error: --from 2 is after --to 1."), err
    ok, out, _ = shell.run(":state windowed --info")
    assert ok and "stateStoreSave" in out and "key struct<window:struct<start:timestamp,end:timestamp>,k:string>" \
        in out and "(3 rows in " in out


def test_state_of_a_dedup_a_join_and_a_state_function(ss, tmp_path):
    src = tmp_path / "in"
    write(src, "1.json", [{"k": "a", "n": 1}, {"k": "a", "n": 1}, {"k": "b", "n": 2}])
    dedup = ss.start(events(ss, src, "k STRING, n INT").dropDuplicates(["k"]), "dedup", sink="memory")
    dedup.process_all_available()
    assert sorted(r["k"] for r in ss.state("dedup").collect()) == ["a", "b"]

    left, right = tmp_path / "left", tmp_path / "right"
    write(left, "1.json", [{"k": "x", "n": 1}, {"k": "y", "n": 2}])
    write(right, "1.json", [{"k": "x", "n": 10}])
    joined = events(ss, left, "k STRING, n INT").join(events(ss, right, "k STRING, n INT").withColumnRenamed("n", "m"),
                                                      "k")
    join = ss.start(joined, "joined", sink="memory")
    join.process_all_available()
    assert sorted((r["k"], r["n"]) for r in ss.state("joined").collect()) == [("x", 1), ("y", 2)]
    assert sorted((r["k"], r["m"]) for r in ss.state("joined", store="right").collect()) == [("x", 10)]
    with pytest.raises(UnsupportedOperation) as no_changes:  # Spark: joinSide and readChangeFeed never go together
        ss.state_changes("joined")
    assert str(no_changes.value) == ("Spark's state reader keeps no change feed for a stream-stream join (joined's "
                                     "operator 0). Read its state after a batch instead, one side at a time (store "
                                     "left or right).")

    from pyspark.sql.streaming.state import GroupStateTimeout

    def total(key, batches, state):
        import pandas as pd

        sum_ = state.get[0] if state.exists else 0
        for batch in batches:
            sum_ += int(batch["n"].sum())
        state.update((sum_,))
        yield pd.DataFrame({"k": [key[0]], "total": [sum_]})

    totals = events(ss, src, "k STRING, n INT").groupBy("k").applyInPandasWithState(
        total, "k STRING, total LONG", "total LONG", "update", GroupStateTimeout.NoTimeout)
    fn = ss.start(totals, "fn_state", sink="memory")
    fn.process_all_available()
    state = ss.state("fn_state").collect()
    assert sorted((r["k"], r["total"]) for r in state) == [("a", 2), ("b", 2)]
    for query in (dedup, join, fn):
        query.stop()


def test_bad_state_and_late_input_get_one_line(ss, shell, tmp_path):
    src = tmp_path / "in"
    write(src, "1.json", [{"k": "a", "n": 1}])
    plain = ss.start(events(ss, src, "k STRING, n INT"), "no_state", sink="memory")
    plain.process_all_available()
    counted = ss.start(events(ss, src, "k STRING, n INT").groupBy("k").count(), "counted")
    counted.process_all_available()
    cases = {
        ":state no_state": "error: no_state keeps no state: it has no stateful operator (aggregation, "
                           "dropDuplicates, stream-stream join, or a state function). Its rows are in its sink: "
                           ":peek no_state shows them.\n",
        ":state counted --operator 7": "error: counted has no stateful operator 7. Its operators: 0.\n",
        ":state counted --batch 99": "error: counted has no batch 99 yet: its state keeps batches 0-0. Pick one of "
                                     "those.\n",
        ":state counted --from 1": "error: --from and --to go with --changes. e.g. :state counted --changes --from 3 "
                                   "--to 5.\n",
        ":state nobody": "error: No query named 'nobody' in the catalog of " + ss.url + ". See what it holds with "
                         ":queries --all.\n",
        ":late counted": "error: counted has no watermark, so no row is ever late for it. Add "
                         "withWatermark(\"eventTime\", \"10 minutes\") before its aggregation or join.\n",
    }
    for line, error in cases.items():
        ok, _, err = shell.run(line)
        assert (ok, err) == (False, error), line
    plain.stop()
    counted.stop()


def test_a_batch_cleaned_up_and_a_checkpoint_gone(ss, shell, tmp_path):
    import shutil

    src = tmp_path / "in"
    ss.spark.conf.set("spark.sql.streaming.minBatchesToRetain", "2")
    try:
        for i in range(5):
            write(src, f"{i}.json", [{"k": "a", "n": i}])
        counted = ss.start(events(ss, src, "k STRING, n INT").groupBy("k").count(), "retained")
        counted.process_all_available()
        counted.stop()
    finally:
        ss.spark.conf.unset("spark.sql.streaming.minBatchesToRetain")
    ok, _, err = shell.run(":state retained --batch 0")
    assert not ok and err.startswith("error: Batch 0 of retained was cleaned up: its state keeps batches ")
    assert err.endswith("(spark.sql.streaming.minBatchesToRetain sets how many are kept).\n")
    shutil.rmtree(counted.checkpoint.removeprefix("file:"))
    ok, _, err = shell.run(":state retained")
    assert (ok, err) == (False, f"error: The checkpoint of retained is gone or holds no committed batch "
                                f"({counted.checkpoint}). Its state went with it; :forget retained removes the "
                                "record.\n")


def test_late_names_the_batch_that_dropped_seed_002_s_late_mobile_event(ss, shell, tmp_path):
    src = tmp_path / "mobile"
    write(src, "file1.json", [{"id": "p1", "action": "open", "ts": "2018-03-02T10:15:20"},
                              {"id": "p2", "action": "open", "ts": "2018-03-02T10:22:40"},
                              {"id": "p3", "action": "open", "ts": "2018-03-02T10:33:50"}])
    mobile = ss.source.files("json", str(src), schema="`id` String, `action` String, `ts` Timestamp",
                             max_files_per_trigger=1)
    counts = mobile.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes"), "action").count()
    query = ss.start(counts, "mobile", mode="update")
    query.process_all_available()
    write(src, "file2.json", [{"id": "p4", "action": "open", "ts": "2018-03-02T10:29:35"},
                              {"id": "p5", "action": "open", "ts": "2018-03-02T10:11:35"}])
    query.process_all_available()
    dropping = next(p.batch_id for p in query.history if p.dropped_by_watermark)
    ok, out, err = shell.run(":late mobile --at '2018-03-02 10:11:35'")
    assert ok, err
    assert out.startswith("mobile: event time ts (delay 10 minutes). Spark judges a batch's rows by the watermark of "
                          "the batch before it: a row whose event time (its window's end, for a window) is at or "
                          f"before it is late, and dropped. Late rows dropped: 1 in batch {dropping}.\n")
    assert "2018-03-02 10:23:50" in out
    moved = next(p.batch_id for p in query.history if (p.watermark or "").startswith("2018-03-02T10:23:50"))
    # the watermark moved in the batch after file1's (one without data); file2's batch, the next, judged by it
    assert dropping == moved + 1
    assert out.rstrip().endswith(f"A row at 2018-03-02 10:11:35 would be dropped now (watermark 2018-03-02 "
                                 f"10:23:50); dropped from batch {dropping} on, kept up to batch {moved}.")
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert table[0].split("|")[1:-1] == [" batch ", " time     ", " late at or before   ", " watermark after     ",
                                         " input rows ", " dropped late "], table[0]
    assert len({line.split("|")[1] for line in table[1:]}) == len(table) - 1  # each batch once: no idle report
    ok, out, _ = shell.run(":late mobile --at '2018-03-02 10:40:00'")
    assert ok and "A row at 2018-03-02 10:40:00 would be kept now (watermark 2018-03-02 10:23:50)" in out
    assert " Watermark" not in out  # it has moved once: nothing to chart yet
    write(src, "file3.json", [{"id": "p6", "action": "close", "ts": "2018-03-02T10:45:00"}])
    query.process_all_available()
    ok, out, _ = shell.run(":late mobile")
    assert ok and " Watermark\n" in out and "● watermark   (minutes after 2018-03-02 10:23:50)" in out, out
    assert re.search(r"^ +11 ┤ .*●+$", out, re.MULTILINE), out  # 10:35:00, 11 minutes on
    query.stop()


def test_state_before_the_first_batch_and_a_join_s_store_on_an_aggregation_each_say_what_is(ss, shell):
    """Issue 55 row 39: "the checkpoint is gone", and Spark's raw "Failed to read the state schema"."""
    src = ss.source.memory("k STRING")
    query = ss.start(src.df.groupBy("k").count(), "not_yet", mode="update")
    ok, _, err = shell.run(":state not_yet")
    assert (ok, err) == (False, "error: not_yet has committed no batch yet, so it holds no state yet. Read it after "
                                "its first batch.\n")
    src.add([("a",)])
    query.process_all_available()
    ok, _, err = shell.run(":state not_yet --store left")
    assert (ok, err) == (False, "error: not_yet has no state store 'left' in operator 0. Its stores: default.\n")
    query.stop()


def test_late_of_a_stopped_query_reads_its_watermark_from_the_checkpoint_in_a_new_session(ss, remote_url):
    """Issue 55 rows 34 to 37: a restarted query with no new data, and a query stopped elsewhere, judge by their
    checkpoint's watermark (10:14 here), and a join names the watermark of each side."""
    import sparkscope

    src = ss.source.memory("k STRING, ts TIMESTAMP")
    counted = src.df.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes")).count()
    query = ss.start(counted, "wc", mode="update")
    src.add([("a", "2024-01-01 10:24:00")])
    query.process_all_available()
    query.stop()
    with sparkscope.connect(remote_url) as other:
        second = Shell(other)
        ok, out, err = second.run(":late wc --at '2024-01-01 10:05:00'")
        assert ok, err
        assert "Its checkpoint's watermark: 2024-01-01 10:14:00 (no batch since it started)." in out
        assert out.rstrip().endswith("A row at 2024-01-01 10:05:00 would be dropped now (watermark 2024-01-01 "
                                     "10:14:00).")
        left = other.source.memory("id STRING, at TIMESTAMP")
        right = other.source.memory("id STRING, seen TIMESTAMP")
        joined = left.df.withWatermark("at", "2 hours").join(right.df.withWatermark("seen", "3 hours"), "id")
        other.start(joined, "both_sides")
        ok, out, err = second.run(":late both_sides")
        assert ok and out.startswith("both_sides: event time at (delay 2 hours) and seen (delay 3 hours). "), (out,
                                                                                                          err)
        other.streams.stop_all()


def test_state_info_lists_the_variables_of_a_transform_with_state_query(ss, shell, tmp_path):
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Counter(StatefulProcessor):
        def init(self, handle) -> None:
            self.count = handle.getValueState("count", "n INT")
            self.seen = handle.getListState("seen", "v INT")

        def handleInputRows(self, key, rows, timerValues):
            import pandas as pd

            n = self.count.get()[0] if self.count.exists() else 0
            for batch in rows:
                n += len(batch)
                self.seen.appendList([(int(v),) for v in batch["n"]])
            self.count.update((n,))
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

    src = tmp_path / "in"
    write(src, "1.json", [{"k": "a", "n": 1}, {"k": "a", "n": 2}, {"k": "b", "n": 3}])
    counted = events(ss, src, "k STRING, n INT").groupBy("k").transformWithStateInPandas(
        Counter(), "k STRING, n INT", "update", "None")
    query = ss.start(counted, "tws")
    query.process_all_available()
    query.stop()
    ok, out, err = shell.run(":state tws --info")
    assert ok, err
    assert re.search(r"\| 0 +\| transformWithStateInPandasExec +\| default +\| \d+ +\| 0-0 +\| count \(value\), "
                     r"seen \(list\) +\| - +\|", out), out
    assert "operator 0 (transformWithStateInPandasExec): count: key struct<k:string>, value struct<n:int>" in out
    assert "operator 0 (transformWithStateInPandasExec): seen: key struct<k:string>, list_element struct<v:int>" in out
    assert sorted(row[:2] for row in shell.rows(":state tws --var count")) == [["a", "2"], ["b", "1"], ["k", "n"]]
    assert sorted(row[:2] for row in shell.rows(":state tws --var seen")[1:]) == [["a", "1"], ["a", "2"], ["b", "3"]]
    ok, _, err = shell.run(":state tws --var nope")
    assert (ok, err) == (False, "error: tws has no state variable 'nope'. Its variables: count, seen.\n")
    ok, _, err = shell.run(":state tws --timers")
    assert (ok, err) == (False, "error: tws keeps no timers in operator 0. Timers belong to transformWithState "
                                "queries with a ProcessingTime or EventTime time mode.\n")
