"""Spark's own Kafka connector, first class (issue 62): fetched by `--kafka` into sparkscope's cache past a broken
~/.m2, said by `server check`, and used by the seed 004 pipeline, :topics, :produce, the lag, a durable restart and a
notebook's display() of a stream."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from pyspark.sql import functions as F

from tests.helpers import run_sparkscope, wait_for
from tests.kafka_broker import SEED_004_TOTALS
from tests.kafka.conftest import ROOT, sparkscope_42
from tests.notebooks import cell, run, text_of


def test_the_connector_came_past_a_broken_m2_into_sparkscope_s_own_cache(connector_server):
    assert connector_server.started["version"] == "4.2.0"
    jars = sorted(path.name for path in (connector_server.cache / "jars").glob("*.jar"))
    assert "org.apache.spark_spark-sql-kafka-0-10_2.13-4.2.0.jar" in jars, jars
    assert "at.yawk.lz4_lz4-java-1.11.0.jar" in jars  # the dependency whose POM ~/.m2 holds without its jar
    checked = run_sparkscope("server", "check", "--remote", connector_server.url, timeout=180)
    assert re.search(r"\| kafka +\| ok +\| Spark's connector \(spark-sql-kafka\)", checked.stdout), checked.stdout


def test_a_second_start_reads_the_connector_from_the_cache_with_no_network(connector_server, tmp_path):
    """After the first time it works offline: a start whose every download goes through a proxy nobody runs (the
    user's Maven settings name it) still starts, from the cache; the same start with an empty cache cannot."""
    home = tmp_path / "offline-home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(
        "<settings><proxies><proxy><active>true</active><protocol>https</protocol><host>127.0.0.1</host>"
        "<port>9</port></proxy></proxies></settings>")
    from sparkscope.server.ports import free_port

    env = {**connector_server.env, "HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state")}
    started = sparkscope_42("server", "start", "--kafka", "--port", str(free_port()), env=env)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert "Spark 4.2.0" in started.stdout
    finally:
        sparkscope_42("server", "stop", env=env, timeout=120)
    nothing = sparkscope_42("server", "start", "--kafka", "--port", str(free_port()),
                            env={**env, "XDG_CACHE_HOME": str(tmp_path / "empty-cache")})
    assert nothing.returncode != 0 and nothing.stderr.strip() == (
        "error: --kafka: Spark's Kafka connector org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 could not be "
        "downloaded from https://repo1.maven.org/maven2/ (not found). Start without --kafka: sparkscope's own Kafka "
        "source and sink need no download."), nothing.stderr


def test_seed_004_runs_through_the_connector_with_its_totals_exact(connector_server, kafka_broker):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_CONNECT_AUTHENTICATE_TOKEN": connector_server.token}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "12_kafka_transactions.py"), "--remote",
                           connector_server.url, "--bootstrap", kafka_broker.bootstrap], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert "Kafka through Spark's connector" in done.stdout, done.stdout
    assert SEED_004_TOTALS in done.stdout
    assert "click windows: watermark 2023-08-01T10:05:10.000Z, late clicks dropped: 1\n" in done.stdout


def test_topics_produce_and_the_lag_through_the_connector(ss, connector_server, kafka_broker, topic):
    kafka_broker.create(topic, 1)
    produced = run_sparkscope("--remote", connector_server.url, "-c", f":produce {topic}_rest a b c --bootstrap "
                              f"{kafka_broker.bootstrap}")
    assert produced.returncode == 0, produced.stdout + produced.stderr
    assert f"Sent 3 records to {topic}_rest at {kafka_broker.bootstrap}" in produced.stdout, produced.stdout
    listed = run_sparkscope("--remote", connector_server.url, "-c", f":topics --bootstrap {kafka_broker.bootstrap}")
    assert re.search(rf"\| {topic} +\| 1 +\|", listed.stdout), listed.stdout
    assert re.search(rf"\| {topic}_rest +\| \d+ +\| 3 +\|", listed.stdout), listed.stdout  # auto-created, 3 records
    kafka_broker.produce(topic, [str(i) for i in range(200)])
    df = ss.source.kafka(kafka_broker.bootstrap, subscribe=topic, starting_offsets="earliest",
                         max_offsets_per_trigger=10)
    query = ss.start(df.select(F.col("value").cast("string").alias("v")), "lagging", sink="memory",
                     trigger="0.5 seconds")
    assert "Spark's connector" in " ".join(query.notes), query.notes
    wait_for(lambda: query.progress is not None and query.progress.input_rows == 10, 120, what="a batch of ten")
    progress = query.progress
    assert progress.offsets_behind == 200 - int(progress.sources[0].end_offset[topic]["0"])
    info = wait_for(lambda: next((q for q in ss.streams.queries() if q.name == "lagging" and q.behind), None), 60,
                    what="the lag in ss.streams.queries()")
    assert 0 < info.behind <= 190
    from sparkscope.core.rendering.dashboard import Dashboard

    tracks = wait_for(lambda: [t for t in Dashboard(ss.streams.monitor, None, lambda name: "").tracks()
                               if t.name == "lagging" and t.latest is not None and t.latest.offsets_behind],
                      60, what="the lag in :watch's data")
    assert 0 < tracks[0].latest.offsets_behind <= 190
    query.stop()


def test_a_restarted_query_reads_every_record_exactly_once_through_the_connector(ss, kafka_broker, topic, tmp_path):
    kafka_broker.create(topic, 2)
    kafka_broker.produce(topic, [json.dumps({"user": f"u{i % 3}", "amount": i}) for i in range(30)])
    parsed = ss.source.kafka(kafka_broker.bootstrap, subscribe=topic, starting_offsets="earliest") \
        .select(F.from_json(F.col("value").cast("string"), "user STRING, amount INT").alias("t")).select("t.*")
    out = tmp_path / "out"
    ss.start(parsed, "exactly_once", sink="parquet", path=str(out), trigger="0.5 seconds")

    def amounts():
        return sorted(r[0] for r in ss.spark.read.schema("user STRING, amount INT").parquet(str(out))
                      .select("amount").collect())

    wait_for(lambda: amounts() == list(range(30)), 120, what="the first 30")
    ss.streams.get("exactly_once").stop()
    kafka_broker.produce(topic, [json.dumps({"user": "u9", "amount": i}) for i in range(30, 40)])
    ss.restart("exactly_once")  # from its checkpoint: the Kafka offsets it committed
    wait_for(lambda: len(amounts()) >= 40, 120, what="the ten produced while it was stopped")
    assert amounts() == list(range(40))
    ss.streams.get("exactly_once").stop()


def test_a_notebook_displays_a_kafka_stream_read_through_the_connector(connector_server, kafka_broker, topic):
    kafka_broker.create(topic, 1)
    kafka_broker.produce(topic, [f"record-{i}" for i in range(5)])
    steps = {
        "load": cell("%load_ext sparkscope"),
        "connect": cell(f"%sparkscope --remote {connector_server.url}"),
        "show": cell(f"df = (spark.readStream.format('kafka').option('kafka.bootstrap.servers', "
                     f"'{kafka_broker.bootstrap}').option('subscribe', '{topic}')"
                     ".option('startingOffsets', 'earliest').load().selectExpr('CAST(value AS STRING) AS v'))\n"
                     "display(df, streamName='shown_from_kafka')", interrupt_on=(r"record-4", 1)),
        "stop": cell("%stop --all"),
    }
    nb, _ = run(list(steps.values()))
    out = {name: text_of(nb.cells[position]) for position, name in enumerate(steps)}
    assert all(f"record-{i}" in out["show"] for i in range(5)), out["show"]
    assert "Stopped updating: the kernel was interrupted" in out["show"], out["show"]
    errors = [name for position, name in enumerate(steps)
              if any(o["output_type"] == "error" for o in nb.cells[position].get("outputs", []))]
    assert errors == [], out


def test_a_real_time_query_runs_kafka_to_kafka_and_what_it_lacks_is_said_before_the_start(ss, kafka_broker, topic):
    import pytest

    from sparkscope.client.errors import UnsupportedOperation

    bootstrap = kafka_broker.bootstrap
    kafka_broker.create(topic, 1)
    kafka_broker.create(f"{topic}_out", 1)

    def read(name):
        return (ss.spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", name).option("startingOffsets", "earliest").load()
                .selectExpr("CAST(value AS STRING) AS value"))

    into_kafka = {"kafka.bootstrap.servers": bootstrap, "topic": f"{topic}_out"}
    query = ss.start(read(topic), "real_time", sink="kafka", options=into_kafka, trigger="realtime")
    assert query.mode == "update" and str(query.trigger) == "realtime:5 seconds"
    kafka_broker.produce(topic, ["a", "b", "c"])
    wait_for(lambda: sorted(kafka_broker.first_values(f"{topic}_out", 3)) == ["a", "b", "c"], 120,
             what="the records written in real time")
    query.stop()

    refusals = {
        "memory": (lambda: ss.start(read(topic), "rt_memory", sink="memory", trigger="realtime"),
                   "Real-time mode writes to Kafka, foreach or the console only, and this query writes to memory"),
        "rate": (lambda: ss.start(ss.spark.readStream.format("rate").load(), "rt_rate", sink="console",
                                  trigger="realtime"),
                 "Real-time mode reads Spark's Kafka source only, and this query reads rate"),
        "dedup": (lambda: ss.start(read(topic).dropDuplicates(["value"]), "rt_dedup", sink="kafka",
                                   options=into_kafka, trigger="realtime"),
                  "Real-time mode runs dropDuplicates from Spark 4.3 on, and this server is 4.2.0"),
        "short": (lambda: ss.start(read(topic), "rt_short", sink="kafka", options=into_kafka, trigger="realtime:2s"),
                  "A real-time batch lasts at least 5 seconds"),
    }
    slots = int(re.fullmatch(r"local\[(\d+)\]", ss.spark.conf.get("spark.master")).group(1))
    kafka_broker.create(f"{topic}_wide", slots + 1)
    refusals["slots"] = (lambda: ss.start(read(f"{topic}_wide"), "rt_wide", sink="kafka", options=into_kafka,
                                          trigger="realtime"),
                         f"Topic {topic}_wide has {slots + 1} partitions and this server has {slots} task slots: "
                         "real-time mode runs one task per partition at once")
    for name, (start, said) in refusals.items():
        with pytest.raises(UnsupportedOperation) as refused:
            start()
        assert str(refused.value).startswith(said), (name, str(refused.value))
    assert [q.name for q in ss.streams.running()] == []  # nothing was started by a refused start


def test_a_real_time_query_into_the_default_sink_shows_its_lines_in_peek_as_they_arrive(ss, kafka_broker, topic):
    """Real-time mode commits a batch only at its end (5 s here): the rows reach the ring one by one before that, through
    the jar's foreach writer, and :peek, :tail and display() read the ring as for any query of the default sink."""
    kafka_broker.create(topic, 1)
    lines = (ss.spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
             .option("subscribe", topic).load().selectExpr("CAST(value AS STRING) AS line"))
    query = ss.start(lines, "rt_lines", trigger="realtime:5s", keep=3)
    assert (query.sink, query.mode, str(query.trigger)) == ("bounded", "update", "realtime:5 seconds")
    kafka_broker.produce(topic, ["one", "two", "three", "four"])  # after the start: it returns once the batch reads
    produced_at = time.time()
    wait_for(lambda: sorted(r["line"] for r in ss.peek("rt_lines").as_dicts()) == ["four", "three", "two"], 15,
             what="the lines produced after the start, in :peek (the newest 3 kept)")
    assert query.state == "active"
    # its latency: each row measured as it reached the ring, said with the batch's progress (which Spark's lacks)
    measured = wait_for(lambda: next((p.latency for p in ss.streams.monitor.history(query.id) if p.latency is not None),
                                     None), 30, what="the real-time batch's latency, with its progress")
    assert measured.records == 4
    assert 0 <= measured.p50_ms <= measured.p99_ms <= measured.max_ms <= (time.time() - produced_at) * 1000
    assert query.progress.latency is not None  # the SDK's query.progress says it too
    query.stop()


def test_a_kafka_query_into_the_default_sink_reports_its_records_latency_in_its_progress(ss, kafka_broker, topic):
    """The user's projection drops Kafka's timestamp; sparkscope carries it to its sink anyway, which measures each
    record from its timestamp in Kafka to the batch's commit, and says p50, p90 and p99 in the progress (its sink's
    metrics), while :peek shows the user's columns only."""
    kafka_broker.create(topic, 1)
    lines = (ss.spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .selectExpr("CAST(value AS STRING) AS line").where("line != 'skip'"))
    query = ss.start(lines, "mb_latency", trigger="1 second")
    assert not [note for note in query.notes if note.startswith("no latency")], query.notes
    before = time.time()
    kafka_broker.produce(topic, ["one", "skip", "two", "three"])
    measured = wait_for(lambda: next((p.latency for p in query.history if p.latency is not None), None), 60,
                        what="a batch's latency in the query's progress")
    took_ms = (time.time() - before) * 1000
    assert measured.records == 3  # the filter's rows, the ones the sink had
    assert 0 <= measured.p50_ms <= measured.p90_ms <= measured.p99_ms <= measured.max_ms <= took_ms
    raw_metrics = next(p.raw["sink"]["metrics"] for p in query.history if p.latency is not None)
    assert raw_metrics["latencyRecords"] == "3"  # in Spark's own progress JSON, as plain pyspark reads it
    peeked = ss.peek("mb_latency")
    assert (peeked.columns, sorted(r["line"] for r in peeked.as_dicts())) == (["line"], ["one", "three", "two"])
    assert ss.spark.table("mb_latency").columns == ["line"]
    query.stop()


def test_an_aggregation_s_latency_is_that_of_the_newest_record_each_updated_row_counts(ss, kafka_broker, topic):
    kafka_broker.create(topic, 1)
    counts = (ss.spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").load()
              .select(F.col("value").cast("string").alias("user")).groupBy("user").count())
    query = ss.start(counts, "agg_latency", mode="update", trigger="1 second")
    kafka_broker.produce(topic, ["ana", "bob", "ana"])
    measured = wait_for(lambda: next((p.latency for p in query.history if p.latency is not None), None), 60,
                        what="the aggregation's latency")
    assert measured.records == 2  # one updated row per user
    assert sorted((r["user"], r["count"]) for r in ss.peek("agg_latency").as_dicts()) == [("ana", 2), ("bob", 1)]
    query.stop()


def test_a_query_whose_plan_sparkscope_does_not_follow_says_it_reports_no_latency(ss, kafka_broker, topic):
    kafka_broker.create(topic, 1)
    kafka = (ss.spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .select(F.col("value").cast("string").alias("v")))
    both = kafka.union(kafka)
    query = ss.start(both, "no_latency", trigger="1 second")
    assert ("no latency: sparkscope measures a Kafka query's latency where its plan passes each record on, and its "
            "plan has a set op, which sparkscope does not follow") in query.notes, query.notes
    kafka_broker.produce(topic, ["x"])
    wait_for(lambda: sorted(r["v"] for r in ss.peek("no_latency").as_dicts()) == ["x", "x"], 60, what="both rows")
    assert query.progress.latency is None
    query.stop()


def test_the_repl_shows_a_kafka_query_s_latency_in_progress_and_alerts_on_it(connector_server, kafka_broker, topic,
                                                                             tmp_path):
    kafka_broker.create(topic, 1)
    kafka_broker.produce(topic, [f"r{i}" for i in range(20)])
    script = tmp_path / "latency.sps"
    script.write_text(
        f"lines = (spark.readStream.format('kafka').option('kafka.bootstrap.servers', '{kafka_broker.bootstrap}')"
        f".option('subscribe', '{topic}').option('startingOffsets', 'earliest').load()"
        ".selectExpr('CAST(value AS STRING) AS line'))\n"
        "q = ss.start(lines, 'repl_latency', trigger='1 second')\n"
        "q.process_all_available()  # the 20 records produced before the start: a batch with its latency\n"
        ":progress repl_latency\n"
        ":alerts latency 1ms\n"
        ":stop repl_latency\n")
    done = run_sparkscope("--remote", connector_server.url, "-f", str(script),
                          env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": connector_server.token}, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    header = next(line for line in done.stdout.splitlines() if "latency p50" in line)
    assert "latency p99" in header, done.stdout
    assert ("latency: from each record's timestamp in Kafka to the moment sparkscope's sink had it"
            in done.stdout), done.stdout
    assert "p99 latency over 1.0 ms)" in done.stdout, done.stdout
