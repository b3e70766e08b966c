"""Real-time mode's trigger and what it needs, checked before the start (client/queries/realtime.py): each missing
need one line."""

from __future__ import annotations

import pytest

from sparkscope.client.errors import ConfigError
from sparkscope.client.queries.planning import PlanShape, Trigger, parse_trigger
from sparkscope.client.queries.realtime import Needs, problem


def test_realtime_is_a_trigger_with_a_batch_of_five_seconds_unless_given():
    assert parse_trigger("realtime") == Trigger("realtime", "5 seconds")
    assert parse_trigger("realtime:10s") == Trigger("realtime", "10 seconds")
    assert parse_trigger("real-time:1 minute").seconds == 60
    assert parse_trigger("realtime:10s").writer_kwargs() == {"realTime": "10 seconds"}
    assert str(parse_trigger("realtime")) == "realtime:5 seconds"
    with pytest.raises(ConfigError, match="or realtime"):
        parse_trigger("soonish")


def needs(**changed) -> Needs:
    base = dict(server="4.2.0", client="4.3.0", sources=("kafka",), connector=True, sink="kafka", mode=None,
                shape=PlanShape(), batch_seconds=5.0, partitions={"tx": 2}, slots=8)
    return Needs(**{**base, **changed})


def test_a_stateless_kafka_to_kafka_query_has_what_real_time_mode_needs():
    assert problem(needs()) is None
    assert problem(needs(sink="console", mode="update", partitions=None, slots=None)) is None
    assert problem(needs(server="4.3.0", shape=PlanShape(aggregation=True))) is None  # aggregations from 4.3
    assert problem(needs(sink="bounded", tasks_in_driver=True)) is None  # its foreach writer fills the ring


@pytest.mark.parametrize("changed, said", [
    (dict(server="4.1.1"), "Real-time mode needs a Spark 4.2 server or later (Python's trigger(realTime=…) and its "
                           "Spark Connect field came with 4.2), and this one is 4.1.1"),
    (dict(client="4.1.4"), "Real-time mode needs pyspark 4.2 or later on this client, and this one is 4.1.4"),
    (dict(sources=("rate",)), "Real-time mode reads Spark's Kafka source only, and this query reads rate"),
    (dict(connector=False), "Real-time mode reads Spark's Kafka source only, and this server has no Kafka connector "
                            "(sparkscope's own Kafka source cannot run in real time)"),
    (dict(sink="memory"), "Real-time mode writes to Kafka, foreach or the console only, and this query writes to "
                          "memory (Spark refuses its memory sink)"),
    (dict(sink="bounded", tasks_in_driver=False), "In real time, sparkscope's default sink keeps a query's rows only "
                                                  "on a server whose tasks run in its driver (local mode), and this "
                                                  "server runs them on executors"),
    (dict(mode="append"), "Real-time mode writes in update mode only, and this query asks for append"),
    (dict(shape=PlanShape(stream_stream_join=True)), "Real-time mode cannot run a stream-stream join"),
    (dict(shape=PlanShape(session_window=True, aggregation=True)), "Real-time mode cannot run a session window"),
    (dict(shape=PlanShape(aggregation=True)), "Real-time mode runs an aggregation from Spark 4.3 on, and this "
                                              "server is 4.2.0"),
    (dict(shape=PlanShape(deduplication=True)), "Real-time mode runs dropDuplicates from Spark 4.3 on, and this "
                                                "server is 4.2.0"),
    (dict(batch_seconds=2.0), "A real-time batch lasts at least 5 seconds (spark.sql.streaming.realTimeMode."
                              "minBatchDuration), and this one asks for 2: it is how often the query checkpoints, "
                              "not its latency"),
    (dict(partitions={"tx": 3}, slots=2), "Topic tx has 3 partitions and this server has 2 task slots: real-time "
                                          "mode runs one task per partition at once"),
])
def test_each_missing_need_is_one_line(changed, said):
    found = problem(needs(**changed))
    assert found is not None and found[0] == said and found[1]
