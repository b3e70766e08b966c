"""The watermark's verdicts (pure logic): the plan's withWatermark, and whether a row would be dropped."""

from __future__ import annotations

import pytest

from sparkscope.client.errors import ConfigError
from sparkscope.client.monitoring.lateness import late_rows, parse_time, verdict, watermark_spec
from sparkscope.client.monitoring.progress import Progress

PLAN = """== Analyzed Logical Plan ==
window: struct<start:timestamp,end:timestamp>, action: string, count: bigint
Aggregate [window#12-T600000ms, action#1], [window#12-T600000ms AS window#10-T600000ms, action#1, count(1) AS count#11L]
+- EventTimeWatermark 5c1d2a3e-0b1c-4d5e-8f90-123456789abc, ts#2: timestamp, 10 minutes
   +- StreamingRelation FileSource[/in], [id#0, action#1, ts#2]
"""


def p(batch: int, watermark: str | None, dropped: int = 0) -> Progress:
    return Progress.from_json({"batchId": batch, "eventTime": {"watermark": watermark} if watermark else {},
                               "stateOperators": [{"numRowsDroppedByWatermark": dropped}]})


HISTORY = [p(0, "1970-01-01T00:00:00.000Z"), p(1, "2018-03-02T10:23:50.000Z"),
           p(2, "2018-03-02T10:23:50.000Z", dropped=1), p(3, "2018-03-02T10:29:35.000Z")]


def test_the_watermark_of_a_plan():
    spec = watermark_spec(PLAN)
    assert (spec.column, spec.delay) == ("ts", "10 minutes")
    assert watermark_spec("EventTimeWatermark time#4: timestamp, 1 hour").column == "time"
    assert watermark_spec("Aggregate [k#1]\n+- StreamingRelation x") is None


def test_a_row_is_dropped_once_the_watermark_of_the_batch_before_its_own_reaches_it():
    """Spark judges a batch's rows by the watermark of the batch before it (batch 1 ran with 10:23:50, yet its rows
    were judged by batch 0's: none): a row at 10:11:35 in batch 1 is kept, and in batch 2 dropped."""
    found = verdict(HISTORY, parse_time("2018-03-02 10:11:35"))
    assert (found.dropped_now, found.first_dropping_batch, found.last_keeping_batch) == (True, 2, 1)
    later = verdict(HISTORY, parse_time("2018-03-02T10:25:00Z"))  # only batch 3's own watermark reaches it
    assert (later.dropped_now, later.first_dropping_batch, later.last_keeping_batch) == (True, None, 3)
    kept = verdict(HISTORY, parse_time("2018-03-02 11:00:00"))
    assert (kept.dropped_now, kept.first_dropping_batch, kept.last_keeping_batch) == (False, None, 3)
    assert verdict([p(0, None)], parse_time("2018-03-02 10:00:00")).dropped_now is False
    assert late_rows(HISTORY) == [(2, 1)]


def test_with_no_batch_since_a_restart_the_checkpoint_s_watermark_judges():
    from datetime import datetime, timezone

    mark = datetime(2018, 3, 2, 10, 14, tzinfo=timezone.utc)
    found = verdict([], parse_time("2018-03-02 10:10:00"), current=mark)  # its window would end at 10:10
    assert (found.dropped_now, found.watermark) == (True, mark)


def test_a_stream_stream_join_names_the_watermark_of_each_side():
    from sparkscope.client.monitoring.lateness import watermark_specs

    joined = ("Join Inner\n:- EventTimeWatermark impressionTime#3: timestamp, 2 hours\n"
              "+- EventTimeWatermark clickTime#7: timestamp, 3 hours")
    assert [(s.column, s.delay) for s in watermark_specs(joined)] == [("impressionTime", "2 hours"),
                                                                      ("clickTime", "3 hours")]


def test_an_idle_report_is_no_batch():
    from sparkscope.client.monitoring.progress import batches_run

    ran = {"addBatch": 5, "triggerExecution": 9}
    history = [Progress.from_json({"batchId": 0, "durationMs": {"latestOffset": 1, "triggerExecution": 1}}),
               Progress.from_json({"batchId": 0, "numInputRows": 2, "durationMs": ran}),
               Progress.from_json({"batchId": 1, "numInputRows": 1, "durationMs": ran}),
               Progress.from_json({"batchId": 2, "durationMs": {"latestOffset": 1, "triggerExecution": 1}})]
    assert [(b.batch_id, b.input_rows) for b in batches_run(history)] == [(0, 2), (1, 1)]


def test_an_event_time_that_is_not_one():
    with pytest.raises(ConfigError, match="'yesterday' is not an event time"):
        parse_time("yesterday")
    assert parse_time("2018-03-02T12:11:35+02:00") == parse_time("2018-03-02 10:11:35")


def test_transform_with_state_variables_are_named_with_their_kind_ttl_and_time_mode():
    from sparkscope.client.state.store import described_state

    properties = ('{"timeMode":"ProcessingTime","outputMode":"Update","stateVariables":['
                  '{"stateName":"total","stateVariableType":"ValueState","ttlEnabled":true},'
                  '{"stateName":"$procTimers_keyToTimestamp","stateVariableType":"TimerState","ttlEnabled":false},'
                  '{"stateName":"seen","stateVariableType":"MapState","ttlEnabled":false}]}')
    assert described_state(properties) == (("total", "seen"), ("value with TTL", "map"), "processing time")
    no_timers = '{"timeMode":"EventTime","stateVariables":[{"stateName":"n","stateVariableType":"ListState"}]}'
    assert described_state(no_timers) == (("n",), ("list",), "")
    assert described_state(None) == ((), (), "")
    assert described_state("not json") == ((), (), "")


def test_a_value_with_a_ttl_and_a_timer_are_flattened_with_their_times():
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    from sparkscope.client.state.columns import flattened_columns

    key = StructField("key", StructType([StructField("userId", StringType())]))
    ttl_value = StructType([key, StructField("list_element", StructType([
        StructField("value", StructType([StructField("temperature", DoubleType())])),
        StructField("ttlExpirationMs", LongType())])), StructField("partition_id", LongType())])
    assert flattened_columns(ttl_value) == [
        "`key`.`userId` AS `userId`", "`list_element`.`value`.`temperature` AS `temperature`",
        "`list_element`.`ttlExpirationMs` AS `ttlExpirationMs`",
        "timestamp_millis(`list_element`.`ttlExpirationMs`) AS `expires_at`", "`partition_id`"]
    timer = StructType([key, StructField("expiration_timestamp_ms", LongType()), StructField("partition_id", LongType())])
    assert flattened_columns(timer) == [
        "`key`.`userId` AS `userId`", "`expiration_timestamp_ms` AS `expiration_timestamp_ms`",
        "timestamp_millis(`expiration_timestamp_ms`) AS `fires_at`", "`partition_id`"]


def test_the_late_chart_plots_the_watermark_after_the_first_event_and_none_before_it_moves():
    from sparkscope.core.rendering.charts import watermark_chart_lines

    assert watermark_chart_lines([p(0, "1970-01-01T00:00:00.000Z"), p(1, "2018-03-02T10:13:00.000Z")], 60) == []
    history = [p(0, "1970-01-01T00:00:00.000Z"), p(1, "2018-03-02T10:13:00.000Z"),
               p(2, "2018-03-02T10:13:00.000Z"), p(3, "2018-03-02T10:23:50.000Z")]
    assert watermark_chart_lines(history, 40, height=4) == [
        " Watermark",
        "    11 ┤                      ●●●●●●●●●●",  # 10 min 50 s after the first, from batch 3
        "       ┤                                ",
        "   5.4 ┤                                ",
        "     0 ┤  ●●●●●●●●●●●●●●●●●●●●          ",  # batches 1 and 2: the first watermark
        "       └────────────────────────────────",
        "        batch 1                  batch 3",
        "        ● watermark   (minutes after 2018-03-02 10:13:00)"]
