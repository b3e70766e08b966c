"""ss.tail(): each new batch's rows as it commits, from Python; ss.late(): why rows were dropped as late, with the
verdict for a row of a given event time (what :tail and :late show in the REPL)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from sparkscope.client.errors import QueryNotFound, UnsupportedOperation


def test_tail_yields_the_rows_of_each_new_batch_until_it_has_as_many_as_asked(ss):
    source = ss.source.memory("word STRING")
    query = ss.start(source.df, "tailed_words")
    try:
        followed = ss.tail("tailed_words", batches=2, timeout=120)
        source.add([("a",), ("b",)])
        first = next(followed)
        source.add([("c",)])
        second = next(followed)
        assert (sorted(first.rows.rows), first.more) == ([("a",), ("b",)], 0)
        assert second.rows.rows == [("c",)] and second.batch_id > first.batch_id
        with pytest.raises(StopIteration):  # two batches were asked for
            next(followed)
        assert query.is_active  # the query runs on after its tail
    finally:
        query.stop()


def test_tail_ends_when_its_query_ends_and_names_a_query_that_is_not_there(ss):
    source = ss.source.memory("n INT")
    query = ss.start(source.df, "tailed_then_stopped")
    followed = ss.tail(query, timeout=120)
    source.add([(1,)])
    assert next(followed).rows.rows == [(1,)]
    query.stop()
    assert list(followed) == []  # its end ends the tail, long before the timeout
    with pytest.raises(QueryNotFound, match="No query named 'nowhere'"):
        ss.tail("nowhere")


def test_late_says_the_watermark_the_rows_dropped_and_whether_a_row_would_be(ss):
    from pyspark.sql import functions as F

    clicks = ss.source.memory("id STRING, ts TIMESTAMP")
    counts = clicks.df.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes")).count()
    query = ss.start(counts, "late_clicks", mode="update")
    try:
        clicks.add([("a", "2018-03-02 10:15:00"), ("b", "2018-03-02 10:40:00")])
        query.process_all_available()
        clicks.add([("late", "2018-03-02 10:05:00")])  # before the watermark of 10:30: dropped
        query.process_all_available()
        found = ss.late("late_clicks")
        assert [(spec.column, spec.delay) for spec in found.watermarks] == [("ts", "10 minutes")]
        assert list(found.dropped.values()) == [1]
        assert [b.dropped for b in found.batches if b.dropped] == [1]
        assert found.verdict("2018-03-02 10:20:00").dropped_now is True
        assert found.verdict(datetime(2018, 3, 2, 10, 45, tzinfo=timezone.utc)).dropped_now is False
    finally:
        query.stop()
    words = ss.start(ss.source.memory("w STRING").df, "no_watermark_here")
    try:
        with pytest.raises(UnsupportedOperation, match="no_watermark_here has no watermark, so no row is ever late"):
            ss.late("no_watermark_here")
    finally:
        words.stop()
