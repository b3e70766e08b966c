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
        assert lines[0].startswith("Batch ") and lines[0].endswith(
            "'s output of checked_mobile after batch " + lines[0].split("after batch ")[1].split(",")[0]
            + ", watermark 2018-03-02 10:23:50 differs ('-' expected only, '+' actual only):"), lines[0]
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
    finally:
        query.stop()


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
