"""Every user error of the SDK becomes one clear SparkscopeError sentence, and nothing is lost."""

from __future__ import annotations

import pytest

from sparkscope.client.errors import (
    AnalysisError,
    ConfigError,
    QueryFailed,
    QueryNotFound,
    SparkscopeError,
    UnsupportedOperation,
)


def test_file_source_without_schema(ss, data_dir):
    with pytest.raises(ConfigError) as err:
        ss.source.files("json", str(data_dir))
    assert str(err.value) == ("A streaming json source needs a schema. Pass schema=\"col TYPE, …\" (or a "
                              "StructType), or set spark.sql.streaming.schemaInference=true.")


def test_bad_ddl_schema(ss, data_dir):
    with pytest.raises(ConfigError) as err:
        ss.source.files("json", str(data_dir), schema="time TIMESTAMPP, action")
    assert str(err.value).startswith("The schema 'time TIMESTAMPP, action' is not valid (")
    assert "Write it as DDL" in str(err.value)


def test_unknown_file_format_and_parse_mode(ss, data_dir):
    with pytest.raises(ConfigError, match="'xml' is not a file format"):
        ss.source.files("xml", str(data_dir), schema="a INT")
    with pytest.raises(ConfigError, match="'lenient' is not a parse mode"):
        ss.source.files("json", str(data_dir), schema="a INT", mode="lenient")


def test_unknown_table_source(ss):
    with pytest.raises(AnalysisError) as err:
        ss.source.table("no_such_table")
    assert "no_such_table" in str(err.value) and "cannot be found" in str(err.value)


def test_kafka_options_are_checked_before_anything_runs(ss):
    with pytest.raises(ConfigError) as err:
        ss.source.kafka("localhost:9092")
    assert str(err.value) == ("One of the options 'subscribe', 'subscribePattern' or 'assign' must be specified. "
                              "See the Kafka options in docs/kafka.md.")
    with pytest.raises(ConfigError) as err:
        ss.source.kafka("localhost:9092", subscribe="events", starting_offsets="yesterday")
    assert str(err.value).startswith("startingOffsets must be earliest, latest or JSON")


def test_starting_a_batch_dataframe(ss):
    with pytest.raises(UnsupportedOperation) as err:
        ss.start(ss.spark.range(5), "batch")
    assert str(err.value) == "This is a batch DataFrame, not a streaming one. Build it from spark.readStream or ss.source.*."


def test_starting_a_pandas_dataframe_names_its_type(ss):
    import pandas as pd

    with pytest.raises(ConfigError) as err:
        ss.start(pd.DataFrame({"a": [1]}), "x6")
    assert str(err.value) == ("This is a pandas.DataFrame, not a Spark DataFrame. Start a streaming DataFrame, e.g. "
                              "spark.readStream…; spark.createDataFrame(pdf) makes a batch one from pandas.")


def test_a_closed_session_and_its_queries_say_that_they_are_closed(remote_url):
    import sparkscope

    with sparkscope.connect(remote_url) as closed:
        query = closed.start(closed.source.rate(1), "after_with")
    for use in (lambda: closed.streams.queries(), lambda: closed.peek("after_with"), lambda: closed.source.rate(),
                lambda: closed.streams.get("after_with"), lambda: closed.streams.running(),
                lambda: closed.streams.monitor):
        with pytest.raises(ConfigError) as err:
            use()
        assert str(err.value) == ("This sparkscope session is closed (its with block ended, or close() was called). "
                                  "Open a new one with sparkscope.connect().")
    with pytest.raises(ConfigError) as err:
        query.stop()
    assert str(err.value) == ("The session of query after_with is closed (its with block ended, or close() was "
                              "called). Open a new one with sparkscope.connect().")
    assert closed.url.startswith("sc://") and closed.session_id  # who it was stays known


def test_invalid_and_duplicate_names(ss):
    rate = ss.source.rate(1)
    with pytest.raises(ConfigError, match="'my-query' is not a valid query name"):
        ss.start(rate, "my-query")
    query = ss.start(rate, "dup")
    try:
        with pytest.raises(ConfigError) as err:
            ss.start(rate, "dup")
        assert str(err.value) == ("A query named 'dup' is already running. Stop it first (ss.streams.stop('dup')) "
                                  "or pick another name.")
        assert (err.value.code, err.value.data) == ("query_exists", {"name": "dup"})
        assert query.is_active  # the running query is untouched
    finally:
        query.stop()


def test_invalid_mode_trigger_and_sink(ss, tmp_path):
    rate = ss.source.rate(1)
    with pytest.raises(ConfigError, match="'sometimes' is not an output mode"):
        ss.start(rate, "m", mode="sometimes")
    with pytest.raises(ConfigError, match="'fast' is not a trigger"):
        ss.start(rate, "t", trigger="fast")
    with pytest.raises(ConfigError, match="'kafka2' is not a sink"):
        ss.start(rate, "s", sink="kafka2")
    with pytest.raises(ConfigError, match="A parquet sink needs a path"):
        ss.start(rate, "p", sink="parquet")
    with pytest.raises(UnsupportedOperation, match="Complete mode needs a streaming aggregation"):
        ss.start(rate, "c", mode="complete")
    agg = rate.groupBy("value").count()
    with pytest.raises(UnsupportedOperation, match="Append mode on an aggregation needs a watermark"):
        ss.start(agg, "a", mode="append")
    with pytest.raises(UnsupportedOperation, match="an aggregation without a watermark cannot be appended"):
        ss.start(agg, "f", sink="parquet", path=str(tmp_path / "o"))
    assert not {"m", "t", "s", "p", "c", "a", "f"} & {q.name for q in ss.streams.queries()}


def test_batch_only_operations_on_a_stream_are_translated(ss):
    from sparkscope.client.error_reading import translate

    stream = ss.source.rate(1)
    with pytest.raises(Exception) as raw:
        stream.count()
    error = translate(raw.value)
    assert isinstance(error, SparkscopeError)
    assert "writeStream.start()" in str(error) and "\n" not in str(error)
    assert error.error_class


def test_unknown_query_and_unknown_peek(ss):
    with pytest.raises(QueryNotFound, match="No query named 'ghost'"):
        ss.streams.get("ghost")
    with pytest.raises(QueryNotFound) as err:
        ss.peek("ghost")
    assert str(err.value) == ("No query or table named 'ghost'. List them with ss.streams.queries(), or start one with "
                              "ss.start(df, name).")


def test_bad_where_in_peek_and_bad_sql(ss):
    query = ss.start(ss.source.rate(5), "ticks_err")
    try:
        with pytest.raises(AnalysisError) as err:
            ss.peek("ticks_err", where="nope > 1")
        assert "nope" in str(err.value)
        with pytest.raises(AnalysisError) as sql_err:
            ss.sql("SELEC 1")
        assert "syntax" in str(sql_err.value).lower()
        assert query.is_active
    finally:
        query.stop()


def test_failed_query_stays_visible_with_its_error(ss):
    from pyspark.sql import functions as F

    failing = ss.source.rate(10).select(F.expr("assert_true(value < 3)").alias("ok"))
    query = ss.start(failing, "doomed")
    with pytest.raises(QueryFailed) as err:
        query.await_termination(60)
    assert str(err.value) == "Query doomed failed: '(value < 3)' is not true!"
    listed = {q.name: q for q in ss.streams.queries()}
    assert listed["doomed"].state == "failed"
    assert listed["doomed"].error == "'(value < 3)' is not true!"
    assert "JVM stacktrace" in query.exception.full or "assert" in query.exception.full.lower()
    assert ss.streams.reset_terminated() >= 1
    assert "doomed" not in {q.name for q in ss.streams.queries()}


def test_peek_pushes_the_limit_and_reads_filters_on_the_server(ss):
    query = ss.start(ss.source.rate(200), "fast_ticks")
    try:
        import time

        for _ in range(40):
            if len(ss.peek("fast_ticks", 50)) == 50:
                break
            time.sleep(0.25)
        rows = ss.peek("fast_ticks", 5, where="value % 2 = 0", order_by="value")
        assert [r[1] for r in rows.rows] == [0, 2, 4, 6, 8]
        assert rows.columns == ["timestamp", "value"]
        assert list(rows.to_pandas()["value"]) == [0, 2, 4, 6, 8]
        assert "timestamp" in query.explain() or "Rate" in query.explain(extended=True)
        status = query.status
        assert set(status) == {"message", "isDataAvailable", "isTriggerActive"} and status["message"], status
    finally:
        query.stop()


def test_a_cancelled_probe_is_never_kept_and_the_next_call_asks_again(remote_url):
    """Issue 51 row 2: Ctrl-C during `:server --refresh` once kept `python MISSING … [OPERATION_CANCELED]`. Here the
    probe is interrupted until it gives up (every operation of the session, as Ctrl-C does), then asked again."""
    import threading

    import sparkscope
    from sparkscope.client.errors import Cancelled

    with sparkscope.connect(remote_url) as ss:
        outcome: dict[str, object] = {}

        def ask() -> None:
            try:
                outcome["caps"] = ss.server.facts.get(refresh=True)
            except SparkscopeError as exc:
                outcome["error"] = exc

        asking = threading.Thread(target=ask)
        asking.start()
        while asking.is_alive():  # an interrupt that comes before the probe's call interrupts nothing: again
            ss.spark.interruptAll()
            asking.join(0.02)
        assert isinstance(outcome.get("error"), Cancelled), outcome
        assert ss.server.facts.known() is None  # nothing kept
        again = ss.server.facts.get(refresh=True)
        assert again.python.version and again.python.failure is None, again.python


def test_pyspark_s_own_except_clauses_catch_sparkscope_s_errors(ss):
    """Code written for pyspark catches AnalysisException and StreamingQueryException: it still does around
    sparkscope's calls, and pyspark's accessors answer (the condition, the one-line message)."""
    from pyspark.errors import AnalysisException, PySparkException, StreamingQueryException
    from pyspark.sql import functions as F

    try:
        ss.sql("SELECT nope FROM range(1)")
    except AnalysisException as caught:
        assert isinstance(caught, AnalysisError) and isinstance(caught, PySparkException)
        assert caught.getCondition() == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
        assert str(caught).startswith("A column, variable, or function parameter with name `nope` cannot be "
                                      "resolved"), str(caught)
    else:
        raise AssertionError("ss.sql of an unknown column raised nothing")
    query = ss.start(ss.source.rate(10).select(F.expr("assert_true(value < 3)").alias("ok")), "doomed_again")
    try:
        query.await_termination(60)
    except StreamingQueryException as caught:
        assert isinstance(caught, QueryFailed)
        assert str(caught) == "Query doomed_again failed: '(value < 3)' is not true!"
    else:
        raise AssertionError("the failed query's await raised nothing")
