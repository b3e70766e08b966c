"""sparkscope.testing as a project's tests use it: a failed check shows both sides with the batch and the watermark,
and the pytest plugin stops what a test left running before the next test."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_failed_check_shows_expected_and_actual_rows_with_the_batch_and_the_watermark(ss):
    from pyspark.sql import functions as F

    from sparkscope.testing import check_answer, check_dropped, check_last_batch

    mobile = ss.source.memory("id STRING, action STRING, ts TIMESTAMP")
    counts = mobile.df.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes"), "action").count()
    query = ss.start(counts, "checked_mobile", mode="update")
    try:
        mobile.add([("p1", "open", "2018-03-02 10:15:20"), ("p3", "open", "2018-03-02 10:33:50")])
        query.process_all_available()
        check_answer(query, [(("2018-03-02 10:30:00", "2018-03-02 10:40:00"), "open", 1),
                             (("2018-03-02 10:10:00", "2018-03-02 10:20:00"), "open", 1)])  # order ignored
        with pytest.raises(AssertionError) as failed:
            check_last_batch(query, [(("2018-03-02 10:10:00", "2018-03-02 10:20:00"), "open", 2)])
        lines = str(failed.value).splitlines()
        # batch 0 wrote the rows; batch 1 ran with no data to move the watermark on (process_all_available waits
        # for it), so the sink's last output is batch 0's, as it stands after batch 1
        assert lines[0] == ("Batch 0's output of checked_mobile after batch 1, watermark 2018-03-02 10:23:50 differs "
                            "('-' expected only, '+' actual only):")
        assert lines[1] == "  columns: window, action, count"
        assert lines[2].split() == ["expected", "(1", "rows)", "actual", "(2", "rows)"], lines
        assert lines[3].startswith("- (('2018-03-02 10:10:00', '2018-03-02 10:20:00'), 'open', 2)  + "), lines
        actual_only = sorted(line.split("+ ", 1)[1] for line in lines[3:])
        assert actual_only == ["(('2018-03-02 10:10:00', '2018-03-02 10:20:00'), 'open', 1)",
                               "(('2018-03-02 10:30:00', '2018-03-02 10:40:00'), 'open', 1)"], lines
        with pytest.raises(AssertionError) as dropped:
            check_dropped(query, 1)
        assert str(dropped.value) == ("Batch 0 of checked_mobile dropped 0 late rows, not 1 (the watermark it ran "
                                      "with: none)"), dropped.value  # the first batch runs with none
        for batch in (99, -1):  # no such batch: a check of it fails, whatever it expects
            with pytest.raises(AssertionError) as missing:
                check_dropped(query, 0, batch=batch)
            assert str(missing.value) == f"checked_mobile ran no batch {batch}: its batches are 0 to 1"
    finally:
        query.stop()


def test_a_timestamp_string_fed_is_read_in_the_session_s_time_zone_as_spark_reads_it(ss):
    from sparkscope.testing import check_answer

    ss.spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        src = ss.source.memory("k STRING, ts TIMESTAMP")
        query = ss.start(src.df, "tokyo_fed")
        src.add([("a", "2024-01-01 10:00:00")])
        query.process_all_available()
        check_answer(query, [("a", "2024-01-01 10:00:00")])
        same = ss.spark.sql("SELECT count(*) FROM tokyo_fed WHERE ts = TIMESTAMP'2024-01-01 10:00:00'").collect()
        assert same[0][0] == 1  # the instant Spark's own literal names, in the session's zone
    finally:
        ss.spark.conf.unset("spark.sql.session.timeZone")


def test_check_state_of_a_column_that_is_not_there_names_the_columns_that_are(ss):
    from sparkscope.testing import check_state

    src = ss.source.memory("k STRING")
    query = ss.start(src.df.groupBy("k").count(), "state_columns", mode="update")
    src.add([("a",), ("a",)])
    query.process_all_available()
    check_state(ss, "state_columns", [("a", 2)], columns=["k", "count"])
    with pytest.raises(AssertionError) as missing:
        check_state(ss, "state_columns", [("a", 2)], columns=["nope"])
    assert str(missing.value) == "The state of state_columns has no column nope: its columns are k, count, partition_id"


def test_a_memory_source_says_in_one_line_what_it_cannot_take(ss):
    from pyspark.sql import Row

    from sparkscope.client.errors import ConfigError

    src = ss.source.memory("id INT, name STRING")
    assert src.add([Row(2, "b"), {"id": 3, "name": "c"}, (4, "d")]) == 0  # a Row of no names is a tuple
    with pytest.raises(ConfigError, match=r"^add takes a list of rows, and 'hello' is one row or one value\. "
                                          r"Put the rows in a list: add\(\['hello'\]\)\.$"):
        src.add("hello")
    with pytest.raises(ConfigError, match=r"^'x' is not an integer, for column id \(int\)"):
        src.add([("x", "y")])
    src.drop()
    with pytest.raises(ConfigError, match=r"^This memory source \(sparkscope_feed_\w+\) was dropped"):
        src.add([(5, "e")])
    old = ss.source.memory("id INT")
    with pytest.warns(DeprecationWarning, match=r"^MemorySource\.forget\(\) is deprecated: use drop\(\)$"):
        old.forget()
    with pytest.raises(ConfigError, match=r"was dropped"):
        old.add([(1,)])


def test_the_plugin_stops_what_a_test_left_running_before_the_next_test(remote_url, tmp_path):
    (tmp_path / "test_left_running.py").write_text('''
def test_leaves_a_query_running(sparkscope_session):
    ss = sparkscope_session
    ss.start(ss.source.rate(5), "left_running")
    assert [q.name for q in ss.spark.streams.active] == ["left_running"]


def test_finds_nothing_running(sparkscope_session):
    assert sparkscope_session.spark.streams.active == []
''')
    done = subprocess.run([sys.executable, "-m", "pytest", "test_left_running.py", "-q", "-p", "no:cacheprovider",
                           "--sparkscope-remote", remote_url], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_a_query_over_a_memory_source_is_recorded_as_not_restartable_and_says_why(ss):
    """Issue 55 row 18: its restart from another session failed with SPARKSCOPE_FEED_GONE."""
    from sparkscope.client.errors import UnsupportedOperation

    src = ss.source.memory("k STRING")
    query = ss.start(src.df, "fed_once")
    query.stop()
    record = ss.catalog.get(ss.url, "fed_once")
    assert (record.restartable, record.reason) == (
        False, "it reads a memory source (ss.source.memory), whose batches are its feeder's, and go with them")
    with pytest.raises(UnsupportedOperation, match="^fed_once cannot be restarted: it reads a memory source"):
        ss.restart("fed_once")
