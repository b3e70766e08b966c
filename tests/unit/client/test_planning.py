"""Pure logic of client/planning: no server."""

from __future__ import annotations


import pytest

from sparkscope.client.errors import ConfigError, UnsupportedOperation
from sparkscope.client.queries.planning import PlanShape, choose_mode, parse_trigger, plan_shape, watermark_warning
from sparkscope.client.queries.planning import check_name, sort_order


AGG = PlanShape(aggregation=True)


AGG_WM = PlanShape(aggregation=True, watermark_before_aggregation=True)


@pytest.mark.parametrize("text,expected", [
    (None, "default"), ("5s", "5 seconds"), ("500ms", "500 milliseconds"), ("1 minute", "1 minutes"),
    ("once", "once"), ("available-now", "available-now"), ("continuous:1s", "continuous:1 seconds"),
])
def test_triggers(text, expected):
    assert str(parse_trigger(text)) == expected


def test_bad_trigger():
    with pytest.raises(ConfigError, match="'soon' is not a trigger"):
        parse_trigger("soon")


@pytest.mark.parametrize("shape,sink,mode,expected", [
    (PlanShape(), "memory", None, "append"), (AGG, "memory", None, "complete"), (AGG, "console", None, "complete"),
    (AGG_WM, "parquet", None, "append"), (AGG, "memory", "update", "update"),
    (PlanShape(stateful_function=True), "memory", None, "update"),
    (PlanShape(stateful_function=True, declared_mode="append"), "memory", None, "append"),
])
def test_output_mode_inference(shape, sink, mode, expected):
    assert choose_mode(shape, sink, mode) == expected


@pytest.mark.parametrize("shape,sink,mode,message", [
    (AGG, "json", "complete", "A json sink only takes append mode, not complete"),
    (AGG, "parquet", None, "cannot be appended"), (AGG, "memory", "append", "needs a watermark"),
    (PlanShape(), "memory", "complete", "needs a streaming aggregation"),
])
def test_output_mode_rejections(shape, sink, mode, message):
    with pytest.raises(UnsupportedOperation, match=message):
        choose_mode(shape, sink, mode)


def test_plan_shape_reads_the_analyzed_section():
    explain = """== Parsed Logical Plan ==
'Aggregate ['x]
== Analyzed Logical Plan ==
window: struct<start:timestamp,end:timestamp>, count: bigint
~EventTimeWatermark 1, window#1, 5 minutes
+- ~Aggregate [window#1], [count(1)]
   +- ~StreamingRelationV2 rate
== Optimized Logical Plan ==
Aggregate"""
    shape = plan_shape(explain)
    assert shape.aggregation and shape.watermark_after_aggregation and not shape.watermark_before_aggregation
    assert "after the aggregation" in watermark_warning(shape)


@pytest.mark.parametrize("node,declared", [
    ("~FlatMapGroupsInPandasWithState f(k#22L)#31, [k#22L], [k#32L, n#33L], [StructField(n,LongType,true)], "
     "Append, NoTimeout", "append"),
    ("~TransformWithStateInPySpark transformWithStateUDF(k#1L)#4, 1, [k#5L, n#6L], Update, NoTime, pandas, false, 0",
     "update"),
])
def test_plan_shape_reads_the_mode_a_stateful_function_declares(node, declared):
    shape = plan_shape(f"{node}\n+- ~Project [(value#1L % 3) AS k#22L]\n   +- ~StreamingRelationV2 rate")
    assert shape.stateful_function and shape.declared_mode == declared
    assert choose_mode(shape, "memory", None) == declared


@pytest.mark.parametrize("text, shown, spec", [
    (None, "last 10,000 rows", "10000"),
    ("500", "last 500 rows", "500"),
    ("50k", "last 50,000 rows", "50000"),
    ("5000 rows", "last 5,000 rows", "5000"),
    ("10m", "last 10 min, at most 100,000 rows", "600s,100000"),  # a time alone has a row cap, named
    ("1h", "last 1 h, at most 100,000 rows", "3600s,100000"),
    ("10m,50000", "last 10 min, at most 50,000 rows", "600s,50000"),
    ("5000000s", "last 57.9 days, at most 100,000 rows", "5000000s,100000"),
    ("3s,500", "last 3 s, at most 500 rows", "3s,500"),
])
def test_what_the_bounded_sink_keeps(text, shown, spec):
    from sparkscope.client.queries.planning import parse_keep

    retention = parse_keep(text)
    assert (str(retention), retention.spec()) == (shown, spec)
    assert parse_keep(retention.spec()) == retention  # what the catalog stores reads back the same


def test_a_grace_period_is_kept_with_what_is_kept():
    from sparkscope.client.queries.planning import parse_keep

    retention = parse_keep("500", "5m")
    assert (retention.rows, retention.grace, retention.spec()) == (500, 300.0, "500,grace=300s")
    assert parse_keep(retention.spec()) == retention  # a restart keeps the same grace period
    assert parse_keep(None, "0").grace == 0.0  # freed as soon as the query ends


@pytest.mark.parametrize("text, message", [
    ("x", "'x' is not what to keep. Write a row count (10000, 50k) or a time (10m, 1h), or both: 10m,50000."),
    ("0", "'0' is not what to keep. Write a row count (10000, 50k) or a time (10m, 1h), or both: 10m,50000."),
    ("5,6", "'5,6' is not what to keep. Write a row count (10000, 50k) or a time (10m, 1h), or both: 10m,50000."),
    ("2M", "Keeping 2,000,000 rows is more than the bounded sink holds (1,000,000). Write that many rows to a "
           "file sink, or to Spark's memory sink."),
])
def test_what_to_keep_is_checked(text, message):
    from sparkscope.client.queries.planning import parse_keep

    with pytest.raises(ConfigError) as err:
        parse_keep(text)
    assert str(err.value) == message


def test_the_default_sink_is_bounded_unless_a_complete_result_replaces_itself():
    from sparkscope.client.queries.planning import default_sink, memory_sink_warning

    processing, continuous = parse_trigger("1s"), parse_trigger("continuous:1s")
    assert [default_sink(mode, processing) for mode in ("append", "update", "complete")] == [
        "bounded", "bounded", "memory"]
    assert default_sink("append", continuous) == "memory"  # continuous processing has no foreachBatch
    assert memory_sink_warning("memory", "append", processing) == (
        "Spark's memory sink keeps every row of this append-mode stream in the server's memory: reading it slows "
        "as it grows, and the server can run out of memory (the default sink keeps the newest 10,000 rows)")
    assert memory_sink_warning("memory", "append", continuous).endswith(
        "(continuous processing cannot use the bounded sink; stop it when you have seen enough)")
    assert memory_sink_warning("memory", "complete", processing) is None
    assert memory_sink_warning("bounded", "append", processing) is None


@pytest.mark.parametrize("spec, keys", [
    ("value", [("value", False)]),
    ("value desc", [("value", True)]),
    ("value DESC, name", [("value", True), ("name", False)]),
    ("a asc,b desc", [("a", False), ("b", True)]),
    ("`odd` desc", [("odd", True)]),
])
def test_sort_orders_say_their_direction_as_sql_does(spec, keys):
    assert sort_order(spec) == keys


def test_a_sort_order_that_is_not_columns_says_how_to_write_one():
    with pytest.raises(ConfigError) as caught:
        sort_order("value down")
    assert "Cannot sort by 'value down'" in caught.value.message and '"value desc, name"' in caught.value.hint


def test_a_query_name_too_long_for_a_folder_is_refused_with_the_limit():
    assert check_name("q" * 200) == "q" * 200
    with pytest.raises(ConfigError) as caught:
        check_name("q" * 10_000)
    assert caught.value.message == "A query name of 10,000 characters is too long"
    assert "at most 200" in caught.value.hint
