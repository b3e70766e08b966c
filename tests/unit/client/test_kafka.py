"""The Kafka options and batch planning that both the source and the REPL rely on (pure logic)."""

from __future__ import annotations

import re

import pytest

from sparkscope.client.kafka.offsets import Loss, begin, lag, limit, nest, ranges, resolve
from sparkscope.client.kafka.options import KafkaOptionError, SinkOptions, SourceOptions
from sparkscope.client.monitoring.progress import Progress

BOOT = {"kafka.bootstrap.servers": "b:9092"}
WM = {("t", 0): (0, 100), ("t", 1): (10, 30)}


def test_options_as_spark_reads_them():
    parsed = SourceOptions.parse({**BOOT, "subscribe": "a, b", "maxOffsetsPerTrigger": "50", "failOnDataLoss": "FALSE",
                                  "minPartitions": "4", "includeHeaders": "true", "kafka.security.protocol": "SSL"})
    assert parsed.subscription.topics == ("a", "b")
    assert (parsed.max_offsets_per_trigger, parsed.fail_on_data_loss, parsed.min_partitions) == (50, False, 4)
    assert parsed.include_headers and parsed.starting == "latest"
    assert parsed.client["bootstrap.servers"] == "b:9092" and parsed.client["security.protocol"] == "SSL"
    assert parsed.client["group.id"].startswith("spark-kafka-source-")
    pattern = SourceOptions.parse({**BOOT, "subscribePattern": "ev.*"}).subscription
    assert pattern.matches("events") and not pattern.matches("clicks")
    assigned = SourceOptions.parse({**BOOT, "assign": '{"t": [1]}'}).subscription
    assert assigned.wanted("t", 1) and not assigned.wanted("t", 0)
    assert SourceOptions.parse({**BOOT, "subscribe": "t", "startingOffsets": '{"t": {"0": 5, "1": -2}}'}).starting \
        == {"t": {"0": 5, "1": -2}}
    assert SinkOptions.parse({**BOOT, "topic": "out"}).topic == "out"


@pytest.mark.parametrize("options, message", [
    ({"subscribe": "t"}, "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"),
    (BOOT, "One of the options 'subscribe', 'subscribePattern' or 'assign' must be specified"),
    ({**BOOT, "subscribe": "t", "assign": '{"t":[0]}'}, "One of the options 'subscribe', 'subscribePattern' or "
                                                         "'assign' must be specified (not subscribe and assign)"),
    ({**BOOT, "subscribe": "t", "maxOffsetsPerTrigger": "lots"}, "maxOffsetsPerTrigger must be a whole number, "
                                                                  "not 'lots'"),
    ({**BOOT, "subscribe": "t", "failOnDataLoss": "maybe"}, "failOnDataLoss must be true or false, not 'maybe'"),
    ({**BOOT, "subscribe": "t", "startingOffsets": "yesterday"}, "startingOffsets must be earliest, latest or JSON "
                                                                 'like {"topicA":{"0":23,"1":-2}}, not \'yesterday\''),
    ({**BOOT, "subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "Kafka option 'auto.offset.reset' is not "
                                                                         "supported: the source manages it itself"),
    ({**BOOT, "subscribePattern": "("}, "subscribePattern is not a valid pattern"),
])
def test_bad_options_say_what_is_wrong(options, message):
    with pytest.raises(KafkaOptionError) as err:
        SourceOptions.parse(options)
    assert str(err.value).startswith(message)


def test_starting_offsets_resolve_against_the_partitions():
    assert resolve("earliest", WM) == {("t", 0): 0, ("t", 1): 10}
    assert resolve("latest", WM) == {("t", 0): 100, ("t", 1): 30}
    assert resolve({"t": {"0": 42, "1": -2}}, WM) == {("t", 0): 42, ("t", 1): 10}
    with pytest.raises(ValueError, match="startingOffsets has no offset for partition t-1"):
        resolve({"t": {"0": 1}}, WM)


def test_new_partitions_start_at_their_earliest_and_lost_records_are_named():
    at, losses = begin({("t", 0): 50}, WM)
    assert at == {("t", 0): 50, ("t", 1): 10} and losses == []
    at, losses = begin({("t", 0): 50, ("t", 1): 5, ("gone", 0): 7}, WM)
    assert at[("t", 1)] == 10
    assert [str(loss) for loss in losses] == [
        "partition t-1 now starts at offset 10, but the query was to read from offset 5: records 5-9 were deleted",
        "partition gone-0 is gone (was the topic deleted?); the query was to read it from offset 7"]
    _, losses = begin({("t", 1): 80}, WM)
    assert losses == [Loss("t", 1, 80, 30)]
    assert "the topic was recreated or its offsets reset" in str(losses[0])


def test_max_offsets_per_trigger_shares_the_limit_by_backlog():
    latest = {("t", 0): 1000, ("t", 1): 100}
    assert limit({("t", 0): 0, ("t", 1): 0}, latest, None) == latest
    assert limit({("t", 0): 0, ("t", 1): 0}, latest, 110) == {("t", 0): 100, ("t", 1): 10}
    assert limit({("t", 0): 999, ("t", 1): 0}, latest, 10) == {("t", 0): 1000, ("t", 1): 9}  # a share < 1 rounds up
    assert limit({("t", 0): 990, ("t", 1): 95}, latest, 100) == latest  # under the limit: everything


def test_ranges_skip_empty_partitions_and_split_for_min_partitions():
    assert ranges({("t", 0): 0, ("t", 1): 30}, {("t", 0): 100, ("t", 1): 30}) == [ranges({("t", 0): 0},
                                                                                          {("t", 0): 100})[0]]
    split = ranges({("t", 0): 0, ("t", 1): 0}, {("t", 0): 100, ("t", 1): 10}, min_partitions=4)
    assert [(r.partition, r.start, r.end) for r in split] == [(0, 0, 25), (0, 25, 50), (0, 50, 100), (1, 0, 10)]


def test_lag_of_a_progress_from_its_offsets():
    assert lag({"t": {"0": 5, "1": 10}}, {"t": {"0": 50, "1": 10}}).total == 45
    assert lag({"logOffset": 3}, {"logOffset": 9}) is None
    assert lag(12, 40) is None
    p = Progress.from_json({"batchId": 3, "sources": [
        {"description": "rate", "endOffset": 12, "latestOffset": 40},
        {"description": "k", "endOffset": '{"t": {"0": 5}}', "latestOffset": '{"t": {"0": 50}}'}]})
    assert p.offsets_behind == 45
    assert Progress.from_json({"batchId": 1, "sources": [{"description": "rate", "endOffset": 1}]}).offsets_behind \
        is None
    assert nest({("t", 1): 3, ("t", 0): 2}) == {"t": {"0": 2, "1": 3}}


def test_the_cluster_for_topics_and_produce_comes_from_the_flag_the_profile_then_the_queries(tmp_path, monkeypatch):
    from sparkscope.client.errors import ConfigError
    from sparkscope.client.kafka.connector import KafkaSupport

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "sparkscope").mkdir()
    (tmp_path / "sparkscope" / "config.toml").write_text('[profiles.dev]\nurl = "sc://h:15002"\n'
                                                         'kafka_bootstrap = "kafka.dev:9092"\n')
    assert KafkaSupport(None, "4.3.0", profile="dev").bootstrap() == "kafka.dev:9092"
    assert KafkaSupport(None, "4.3.0", profile="dev").bootstrap("given:1") == "given:1"
    seen = KafkaSupport(None, "4.3.0")
    with pytest.raises(ConfigError, match="No Kafka cluster to talk to"):
        seen.bootstrap()
    assert seen.bootstrap(recorded=["old:9092"]) == "old:9092"
    seen.remember({"kafka.bootstrap.servers": "a:1", "subscribe": "t"})
    seen.remember({"KAFKA.BOOTSTRAP.SERVERS": "b:2"})
    assert seen.bootstrap(recorded=["old:9092"]) == "b:2"


@pytest.mark.parametrize("name,message", [
    ("", "The topic name '' is empty"), ("bad topic!", "The topic name 'bad topic!' holds ' !', which Kafka does not "
                                                       "allow"),
    ("..", "The topic name '..' is not allowed by Kafka"), ("t" * 250, "has 250 characters (Kafka allows 249)"),
])
def test_topic_names_kafka_refuses_are_one_line(name, message):
    from sparkscope.client.errors import ConfigError
    from sparkscope.client.kafka.broker import check_topic_name

    with pytest.raises(ConfigError, match=re.escape(message)):
        check_topic_name(name)


def test_topic_names_kafka_takes_pass():
    from sparkscope.client.kafka.broker import check_topic_name

    assert check_topic_name("clicks.v2_raw-1") == "clicks.v2_raw-1"


def test_a_topics_pattern_is_a_glob_when_it_has_one_and_a_part_of_the_name_otherwise():
    from sparkscope.client.kafka.broker import _matches

    assert _matches("orders-eu", "orders-*") and not _matches("old-orders", "orders-*")
    assert _matches("old-orders", "orders") and _matches("p1", "p*") and not _matches("ap1", "p*")


def test_recorded_clusters_come_from_a_kafka_source_s_plan_or_a_kafka_sink_s_options_this_session_s_last():
    import dataclasses

    from pyspark.sql.connect.proto import Relation

    from sparkscope.client.catalog.records import Record
    from sparkscope.client.kafka.connector import recorded_bootstraps

    def reading(cluster: str) -> bytes:
        plan = Relation()
        plan.read.data_source.format = "kafka"
        plan.read.data_source.options["kafka.bootstrap.servers"] = cluster
        plan.read.data_source.options["subscribe"] = "t"
        return plan.SerializeToString()

    base = Record(server="s", name="q", query_id=None, session_id="other", plan=None, sink="memory", mode="append",
                  trigger="", options={}, path=None, table_name=None, checkpoint=None, started_by="u", started_at=1.0,
                  state="active", last_batch=None, ended_at=None, error=None, restartable=True, reason=None,
                  seen_at=None)
    records = [dataclasses.replace(base, name="mine", session_id="this", plan=reading("mine:9092"), started_at=1.0),
               dataclasses.replace(base, name="writes", options={"kafka.bootstrap.servers": "sink:9092"},
                                   started_at=3.0),
               dataclasses.replace(base, name="rate", plan=Relation().SerializeToString(), started_at=4.0),
               dataclasses.replace(base, name="reads", plan=reading("theirs:9092"), started_at=2.0)]
    assert recorded_bootstraps(records, "this") == ["theirs:9092", "sink:9092", "mine:9092"]
    assert recorded_bootstraps(records, "nobody") == ["mine:9092", "theirs:9092", "sink:9092"]
