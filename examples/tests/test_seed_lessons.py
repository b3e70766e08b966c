"""The seeds' lessons on windows, watermarks and state, as tests: each feeds hand-made events batch by batch into a
memory source and asserts what Spark computes. sparkscope's pytest plugin gives `sparkscope_session` (an embedded
Spark Connect server for the test session, or `--sparkscope-remote URL`).

    .venv/bin/python -m pytest examples/tests
"""

from __future__ import annotations

from pyspark.sql import functions as F

from sparkscope.testing import check_answer, check_dropped, check_last_batch, check_state, check_watermark


def test_seed000_hourly_counts_of_actions_grow_as_events_arrive(sparkscope_session):
    """Seed 000: actions counted per hour of event time; a later batch adds to the windows it falls in."""
    ss = sparkscope_session
    events = ss.source.memory("action STRING, time TIMESTAMP")
    counts = ss.start(events.df.groupBy("action", F.window("time", "1 hour")).count(), "hourly")
    events.add([("Open", "2016-07-26 02:10:00"), ("Open", "2016-07-26 02:40:00"), ("Close", "2016-07-26 03:05:00")])
    counts.process_all_available()
    check_answer(counts, [("Open", ("2016-07-26 02:00:00", "2016-07-26 03:00:00"), 2),
                          ("Close", ("2016-07-26 03:00:00", "2016-07-26 04:00:00"), 1)])
    events.add([("Open", "2016-07-26 02:55:00"), ("Close", "2016-07-26 04:15:00")])
    counts.process_all_available()
    check_answer(counts, [("Open", ("2016-07-26 02:00:00", "2016-07-26 03:00:00"), 3),
                          ("Close", ("2016-07-26 03:00:00", "2016-07-26 04:00:00"), 1),
                          ("Close", ("2016-07-26 04:00:00", "2016-07-26 05:00:00"), 1)])


def test_seed002_a_late_mobile_event_is_dropped_once_the_watermark_passed_its_window(sparkscope_session):
    """Seed 002: a 10-minute watermark. The first batch moves it to 10:23:50 (its newest event, 10:33:50, less 10
    minutes); an event of 10:11:35 arriving after that falls in a window that ended before it, and is dropped."""
    ss = sparkscope_session
    mobile = ss.source.memory("id STRING, action STRING, ts TIMESTAMP")
    counts = mobile.df.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes"), "action").count()
    query = ss.start(counts, "mobile", mode="update")
    mobile.add([("p1", "open", "2018-03-02 10:15:20"), ("p2", "open", "2018-03-02 10:22:40"),
                ("p3", "open", "2018-03-02 10:33:50")])
    query.process_all_available()
    check_watermark(query, "2018-03-02 10:23:50")
    mobile.add([("p4", "open", "2018-03-02 10:29:35")])
    query.process_all_available()
    check_last_batch(query, [(("2018-03-02 10:20:00", "2018-03-02 10:30:00"), "open", 2)])
    check_dropped(query, 0)
    mobile.add([("p5", "open", "2018-03-02 10:11:35")])  # its window ended at 10:20, before the watermark
    query.process_all_available()
    check_dropped(query, 1)
    check_last_batch(query, [])


def test_seed002_sliding_windows_count_an_event_in_each_window_it_falls_in(sparkscope_session):
    """Seed 002's sliding windows: 10 minutes long, every 5 minutes, so each event counts in two windows."""
    ss = sparkscope_session
    mobile = ss.source.memory("id STRING, action STRING, ts TIMESTAMP")
    sliding = ss.start(mobile.df.groupBy(F.window("ts", "10 minutes", "5 minutes"), "action").count(), "sliding")
    mobile.add([("p1", "open", "2018-03-02 10:12:00"), ("p2", "close", "2018-03-02 10:18:00")])
    sliding.process_all_available()
    check_answer(sliding, [(("2018-03-02 10:05:00", "2018-03-02 10:15:00"), "open", 1),
                           (("2018-03-02 10:10:00", "2018-03-02 10:20:00"), "open", 1),
                           (("2018-03-02 10:10:00", "2018-03-02 10:20:00"), "close", 1),
                           (("2018-03-02 10:15:00", "2018-03-02 10:25:00"), "close", 1)])


def test_seed004_each_user_s_running_count_is_kept_in_state(sparkscope_session):
    """Seed 004: a running count of log lines per user. The state holds one row per user seen so far; each batch's
    output is the users whose count it changed."""
    ss = sparkscope_session
    logs = ss.source.memory("userId STRING, timestamp TIMESTAMP")
    counts = ss.start(logs.df.groupBy("userId").count(), "user_counts", mode="update")
    logs.add([("user1", "2023-07-23 00:00:00"), ("user2", "2023-07-23 00:01:00")])
    counts.process_all_available()
    logs.add([("user1", "2023-07-23 00:02:00"), ("user3", "2023-07-23 00:03:00")])
    counts.process_all_available()
    check_last_batch(counts, [("user1", 2), ("user3", 1)])
    check_state(ss, "user_counts", [("user1", 2), ("user2", 1), ("user3", 1)], columns=["userId", "count"])
