"""Fast tests of the monitoring logic: alert rules, charts, progress export and normalisation, and a monitor whose
session closed under it."""

from __future__ import annotations

import csv
import json

import pytest

from sparkscope.client.monitoring.alerts import AlertRules
from sparkscope.client.errors import ConfigError
from sparkscope.client.monitoring.monitor import Event, Track
from sparkscope.client.monitoring.progress import Progress, write_history
from sparkscope.core.rendering.charts import compact, line_chart, sparkline
from sparkscope.core.rendering.render import progress_charts, render_table
from sparkscope.core.rendering.results import Table


def progress(batch, rows=100, inp=100.0, proc=100.0, duration=500, dropped=0, name="q", watermark=None,
             sources=(), state_rows=7):
    return Progress.from_json({
        "id": "id-1", "runId": "r", "name": name, "timestamp": f"2026-01-01T00:00:{batch:02d}.000Z",
        "batchId": batch, "numInputRows": rows, "inputRowsPerSecond": inp, "processedRowsPerSecond": proc,
        "durationMs": {"triggerExecution": duration, "addBatch": duration - 50},
        "eventTime": {"watermark": watermark} if watermark else {},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": state_rows,
                            "numRowsDroppedByWatermark": dropped}],
        "sources": list(sources), "sink": {"description": "MemorySink"},
    })


def event(p):
    return Event("progress", "id-1", p.name, progress=p)


def test_failure_alert_names_the_error_and_where_to_look():
    rules = AlertRules()
    alerts = rules.feed(Event("terminated", "id-1", "counts", error="boom"))
    assert [str(a) for a in alerts] == ["alert: counts failed: boom"]
    assert rules.feed(Event("terminated", "id-1", "counts", error=None)) == []


def test_falling_behind_needs_three_growing_batches_in_a_row_and_is_said_once():
    rules = AlertRules()
    behind = [rules.feed(event(progress(b, rows=100 + 10 * b, inp=100.0, proc=60.0))) for b in range(6)]
    assert [len(a) for a in behind] == [0, 0, 0, 1, 0, 0]  # batch 0 has nothing to grow from
    assert str(behind[3][0]) == ("alert: q is falling behind: processing 60.0 rows/s of 100.0 arriving, "
                                 "batches growing (3 batches in a row)")
    rules.feed(event(progress(6, rows=100, inp=100.0, proc=150.0)))  # caught up
    again = [rules.feed(event(progress(b, rows=100 + 10 * b, inp=100.0, proc=60.0))) for b in range(7, 10)]
    assert [len(a) for a in again] == [0, 0, 1]


def test_default_trigger_rate_artifact_is_not_falling_behind():
    # with the default trigger, Spark measures input over the gap between batches: 1,666/s in, 25/s done
    rules = AlertRules()
    assert all(rules.feed(event(progress(b, rows=20, inp=1666.7, proc=24.8))) == [] for b in range(10))


def test_sources_short_of_their_newest_offset_are_falling_behind():
    rules = AlertRules()
    lag = [{"description": "KafkaV2[Subscribe[events]]", "endOffset": {"events": {"0": 500}},
            "latestOffset": {"events": {"0": 9000}}, "numInputRows": 500}]
    alerts = [rules.feed(event(progress(b, sources=lag))) for b in range(3)]
    assert [str(a[0]) for a in alerts if a] == [
        "alert: q is falling behind: 8,500 records behind the newest Kafka offsets, and not catching up "
        "(3 batches in a row)"]


def test_a_kafka_lag_that_shrinks_is_not_falling_behind():
    rules = AlertRules()

    def kafka(end, latest):
        return [{"description": "x", "endOffset": {"t": {"0": end}}, "latestOffset": {"t": {"0": latest}},
                 "numInputRows": 100}]

    catching_up = [rules.feed(event(progress(b, sources=kafka(100 * (b + 1), 1000)))) for b in range(5)]
    assert catching_up == [[]] * 5


def test_other_sources_short_of_their_newest_offset_are_falling_behind():
    rules = AlertRules()
    files = [{"description": "FileStreamSource[file:/in]", "endOffset": {"logOffset": 3},
              "latestOffset": {"logOffset": 9}, "numInputRows": 30}]
    alerts = [rules.feed(event(progress(b, sources=files))) for b in range(3)]
    assert [str(a[0]) for a in alerts if a] == [
        "alert: q is falling behind: its sources end batches short of the newest data (FileStreamSource[file:/in]) "
        "(3 batches in a row)"]


def test_slow_batch_compares_with_the_trigger_and_repeats_at_most_once_a_minute():
    now = [1000.0]
    rules = AlertRules(lambda name: 5.0 if name == "q" else None, clock=lambda: now[0])
    assert rules.feed(event(progress(1, duration=4000))) == []
    slow = rules.feed(event(progress(2, duration=6200)))
    assert [str(a) for a in slow] == ["alert: q: batch 2 took 6.2 s, longer than its 5 s trigger"]
    assert rules.feed(event(progress(3, duration=7000))) == []
    now[0] += 61
    assert len(rules.feed(event(progress(4, duration=7000)))) == 1
    assert AlertRules().feed(event(progress(1, duration=99_000))) == []  # no trigger interval known


def test_a_latency_over_the_limit_set_alerts_at_most_once_a_minute():
    import dataclasses

    from sparkscope import Latency

    def measured(batch, p99):
        return dataclasses.replace(progress(batch), latency=Latency(batch, 900, 40.0, 200.0, p99, p99 + 5))

    now = [1000.0]
    rules = AlertRules(clock=lambda: now[0])
    assert rules.feed(event(measured(1, 9_000.0))) == []  # no limit set: no such alert
    rules.latency_over_ms = 500.0
    assert rules.feed(event(measured(2, 480.0))) == []
    assert [str(a) for a in rules.feed(event(measured(3, 1250.0)))] == [
        "alert: q: p99 latency 1.2 s in batch 3, over the 500 ms limit set"]
    assert rules.feed(event(measured(4, 1250.0))) == []
    now[0] += 61
    assert [a.kind for a in rules.feed(event(measured(5, 700.0)))] == ["latency"]


def test_rows_dropped_by_the_watermark():
    rules = AlertRules()
    alerts = rules.feed(event(progress(3, dropped=2, watermark="2024-01-01T10:00:00.000Z")))
    assert [str(a) for a in alerts] == [
        "alert: q: the watermark dropped 2 late rows in batch 3 (watermark 2024-01-01T10:00:00.000Z)"]


def test_notice_is_a_note():
    assert [str(a) for a in AlertRules().feed(Event("notice", message="polling instead"))] == ["note: polling instead"]


def test_track_keeps_a_bounded_history_without_duplicates():
    track = Track("id-1", "q")
    for batch in range(700):
        track.add(progress(batch % 60 + (batch // 60) * 60))
    assert len(track.history) == 600
    assert not track.add(progress(699))  # already known
    assert track.latest.batch_id == 699


def test_progress_from_last_progress_json_derives_totals_and_rounds_rates():
    polled = Progress.from_json({"batchId": 1, "sources": [
        {"description": "a", "startOffset": "0", "endOffset": "{\"p\": 1}", "numInputRows": 10,
         "inputRowsPerSecond": 6.4557, "processedRowsPerSecond": 14.66},
        {"description": "b", "numInputRows": 5, "inputRowsPerSecond": 1.0, "processedRowsPerSecond": 2.0}]})
    assert (polled.input_rows, polled.input_rows_per_second, polled.processed_rows_per_second) == (15, 7.5, 16.7)
    assert polled.sources[0].start_offset == 0 and polled.sources[0].end_offset == {"p": 1}
    assert Progress.from_json({"inputRowsPerSecond": "NaN"}).input_rows_per_second == 0.0


def test_export_json_lines_and_csv(tmp_path):
    history = [progress(0), progress(1, rows=3)]
    assert write_history(history, tmp_path / "h.jsonl") == 2
    lines = (tmp_path / "h.jsonl").read_text().splitlines()
    assert [json.loads(line)["batchId"] for line in lines] == [0, 1]
    write_history(history, tmp_path / "h.csv")
    rows = list(csv.DictReader((tmp_path / "h.csv").open()))
    assert [(r["batch_id"], r["input_rows"], r["batch_duration_ms"], r["addBatch_ms"], r["state_rows"])
            for r in rows] == [("0", "100", "500", "450", "7"), ("1", "3", "500", "450", "7")]


@pytest.mark.parametrize("name,message", [("h.txt", "Cannot tell the export format from 'h.txt'"),
                                          ("missing/h.csv", "does not exist")])
def test_export_bad_paths(tmp_path, name, message):
    with pytest.raises(ConfigError, match=message):
        write_history([progress(0)], tmp_path / name)


def test_wide_tables_fit_the_terminal():
    from sparkscope.core.commands.streams import PROGRESS_COLUMNS

    table = Table(PROGRESS_COLUMNS, [["counts", 6, "15:55:24.025", 20, "1,666.7", "24.8", "806 ms", "-", 2, 0]])
    assert max(len(line) for line in render_table(table, width=120).splitlines()) <= 120


def test_sparkline_scales_to_the_top_and_pads_to_width():
    assert sparkline([0, 4, 8], 5) == "  ▁▄█"
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8, 9], 3) == "▆▇█"
    assert sparkline([], 3) == "   "
    assert sparkline([0, 0], 2) == "▁▁"


def test_line_chart_axes_labels_and_legend():
    lines = line_chart({"input": [0, 50, 100], "processed": [0, 100, 100]}, width=20, height=3, unit="rows/s",
                       x_labels=("batch 0", "batch 2"))
    assert lines[0].startswith("   100 ┤") and lines[2].startswith("     0 ┤")
    assert lines[3].startswith("       └" + "─" * 12)
    assert lines[4] == "        batch 0 batch 2"
    assert lines[-1].strip() == "● input   ○ processed   (rows/s)"
    assert "●" in lines[2] and "○" in lines[0]
    assert compact(950) == "950" and compact(1234) == "1.2k" and compact(35_000_000) == "35M"


def test_progress_charts_for_no_history_and_some():
    assert progress_charts("q", [], width=80).splitlines() == ["q: no batches yet",
                                                               "No progress yet: a query reports after its first batch."]
    text = progress_charts("q", [progress(0), progress(1)], width=80)
    assert text.splitlines()[0] == "q: batches 0–1"
    assert "Rows per second" in text and "Batch duration" in text and "addBatch" in text


def test_state_that_grows_without_a_watermark_is_said_once_with_the_fix():
    rules = AlertRules()
    alerts = [rules.feed(event(progress(b, state_rows=10 * (b + 1)))) for b in range(8)]
    said = [str(a) for batch in alerts for a in batch]
    assert said == ['alert: q keeps state without bound: 50 state rows, more after each of the last 5 batches, and '
                    'no watermark to let old keys go. Add withWatermark("eventTime", "10 minutes") before its '
                    'aggregation, dropDuplicates or join (a window then closes and leaves the state)']
    assert [i for i, batch in enumerate(alerts) if batch] == [4]


def test_state_that_grows_with_a_watermark_or_stays_flat_raises_nothing():
    watermarked, flat = AlertRules(), AlertRules()
    for b in range(10):
        assert watermarked.feed(event(progress(b, state_rows=10 * (b + 1), watermark="2026-01-01T00:00:00.000Z"))) \
            == []
        assert flat.feed(event(progress(b, state_rows=5))) == []


def test_a_track_keeps_ten_minutes_of_batches_and_at_most_two_megabytes_of_their_json():
    from sparkscope.client.monitoring.events import HISTORY_BYTES

    def batch(n: int, padding: int = 0) -> Progress:
        return Progress.from_json({"id": "q", "runId": "r", "batchId": n, "numInputRows": 0,
                                   "timestamp": f"2026-11-25T{10 + n // 60:02d}:{n % 60:02d}:00.000Z",
                                   "description": "x" * padding})

    minutely = Track("q", "q")
    for n in range(30):  # one batch a minute for half an hour: a 10 s trigger's ring would still be filling
        minutely.add(batch(n))
    assert [p.batch_id for p in minutely.history] == list(range(19, 30))  # minutes 19..29: the last ten
    assert minutely.history_bytes == sum(len(p.raw_json) for p in minutely.history)
    heavy = Track("q", "q")
    for n in range(30):  # 300 KB of JSON a batch (a source with thousands of partitions): the bytes bound it
        heavy.add(batch(n, padding=300_000))
    assert len(heavy.history) == HISTORY_BYTES // len(heavy.history[-1].raw_json)
    assert heavy.history[-1].batch_id == 29 and heavy.history_bytes <= HISTORY_BYTES


def test_a_console_tail_cuts_a_window_as_spark_shows_it_not_as_a_python_dict():
    import datetime as dt

    from sparkscope.core.rendering.live import _cut

    window = {"start": dt.datetime(2026, 11, 25, 12, 50), "end": dt.datetime(2026, 11, 25, 12, 50, 2)}
    assert _cut(window, 20) == "{2026-11-25 12:50..."  # Spark's console sink: 17 characters and '...'
    assert _cut(window, 60) is window  # it fits: the table renders it, {start, end}
    assert _cut(None, 20) is None


class _ClosedSession:
    """A Session closed under its monitor (its close ran out of time before the monitor's stop): every use says so."""

    url = "sc://localhost:1"

    @property
    def spark(self):
        from sparkscope.client.errors import session_closed

        raise session_closed()


def test_a_monitor_whose_session_closed_under_it_stops_watching_instead_of_dying_with_a_traceback():
    from sparkscope.client.monitoring.monitor import Monitor

    monitor = Monitor(_ClosedSession(), watchdog_interval=0.01)
    monitor._listener = object()  # listening when the session closed
    assert monitor._watchdog() is None  # returns: no ConfigError left to the thread's excepthook


def test_a_polling_monitor_whose_session_closed_under_it_ends_its_loop():
    import threading

    from sparkscope.client.monitoring.monitor import Monitor

    monitor = Monitor(_ClosedSession(), use_listener=False, poll_interval=0.01)
    loop = threading.Thread(target=monitor._poll_loop, daemon=True)
    loop.start()
    loop.join(30)
    assert not loop.is_alive(), "the poll loop went on polling a closed session"
    assert monitor.stale_since is None  # a closed session is not a server that stopped answering


class _Handle:
    """What a poll reads of one of `spark.streams.active` (pyspark's StreamingQuery holds these without an RPC)."""

    def __init__(self, query_id: str, run_id: str, name: str | None = None):
        self.id, self.runId, self.name, self.lastProgress = query_id, run_id, name, None


class _Ended:
    """A query this process registered, as the poll reads it once it no longer runs."""

    def __init__(self, query_id: str, run_id: str, name: str, error: str | None):
        from sparkscope.client.queries.query import QueryError

        self.id, self.run_id, self.name = query_id, run_id, name
        self.exception = QueryError(short=error, full=error) if error else None


class _PolledSession:
    url = "sc://localhost:1"

    def __init__(self):
        import types

        self.active: list[_Handle] = []
        self.known: list[_Ended] = []
        self.spark = types.SimpleNamespace(streams=self)
        self.streams = types.SimpleNamespace(known_queries=lambda: list(self.known))


def test_polling_tells_a_run_that_started_and_failed_between_two_polls_on_the_checkpoint_of_an_earlier_one():
    """The guide's second toTable query on the first's checkpoint: same id, a new run, failed before the next poll.
    The poll said the first run stopped, and the failure was never said."""
    from sparkscope.client.monitoring.monitor import Monitor

    session = _PolledSession()
    monitor = Monitor(session, use_listener=False)
    heard = []
    monitor.subscribe(lambda event: heard.append((event.kind, event.run_id, event.error)))
    session.active = [_Handle("q1", "run-1")]
    monitor.poll_once()
    session.active = []
    session.known = [_Ended("q1", "run-2", "q1", "its checkpoint holds metadata it cannot read")]
    monitor.poll_once()
    assert heard == [("started", "run-1", None), ("started", "run-2", None),
                     ("terminated", "run-2", "its checkpoint holds metadata it cannot read")]


def test_polling_tells_a_restart_that_came_between_two_polls():
    from sparkscope.client.monitoring.monitor import Monitor

    session = _PolledSession()
    monitor = Monitor(session, use_listener=False)
    heard = []
    monitor.subscribe(lambda event: heard.append((event.kind, event.run_id)))
    session.active = [_Handle("q1", "run-1")]
    monitor.poll_once()
    session.active = [_Handle("q1", "run-2")]
    monitor.poll_once()
    assert heard == [("started", "run-1"), ("started", "run-2")]
    assert monitor.track("q1").run_id == "run-2"


def test_polling_does_not_lend_the_end_of_a_run_the_error_of_an_earlier_one():
    """A script restarts a query with pyspark's own start (sparkscope knows only the first run's Query): when the
    second run ends, the poll says it ended, without the first run's error and without taking the first run for a
    new one."""
    from sparkscope.client.monitoring.monitor import Monitor

    session = _PolledSession()
    monitor = Monitor(session, use_listener=False)
    heard = []
    monitor.subscribe(lambda event: heard.append((event.kind, event.run_id, event.error)))
    session.known = [_Ended("q1", "run-1", "q1", "the first run's error")]
    session.active = [_Handle("q1", "run-1")]
    monitor.poll_once()
    session.active = [_Handle("q1", "run-2")]
    monitor.poll_once()
    session.active = []
    monitor.poll_once()
    assert heard == [("started", "run-1", None), ("started", "run-2", None), ("terminated", "run-2", None)]
    assert monitor.track("q1").state == "stopped"


class AuditListener:  # a listener of the user's (pyspark's bus holds any object)
    pass


class AlertListener:
    pass


def test_the_listeners_a_dead_stream_took_off_are_named_and_a_monitor_s_own_is_not():
    from sparkscope.client.monitoring.monitor import Monitor, _listeners_taken_off

    monitors_own = type("_Listener", (), {"__module__": Monitor.__module__})()
    assert _listeners_taken_off(None) == ""  # the bus's lock was not free: nothing was taken off
    assert _listeners_taken_off([monitors_own]) == ""
    assert _listeners_taken_off([AuditListener(), monitors_own]) == (
        "; your listener AuditListener was removed: add it again with spark.streams.addListener")
    assert _listeners_taken_off([AuditListener(), AlertListener()]) == (
        "; your 2 listeners (AuditListener, AlertListener) were removed: add them again with "
        "spark.streams.addListener")
