"""Kafka in the REPL, against a real broker: seed 004's clickstream cell run as written (format("kafka"),
a console sink, awaitTermination), then :produce, :topics and the lag in :queries, in a pseudo-terminal."""

from __future__ import annotations

import json
import re
import uuid

import pexpect

from tests.e2e.conftest import Repl, Screen, clean, spawn
from tests.helpers import wait_for

SEED_CELL = '''\
from pyspark.sql import SparkSession
from pyspark.sql.functions import from_json, col, window
from pyspark.sql.types import StructType, StructField, StringType, TimestampType
# Start a Spark Session
spark = SparkSession.builder \\
    .appName("Watermarking example") \\
    .getOrCreate()
# Define the schema for our data
schema = StructType([
   StructField("user_id", StringType()),
   StructField("clicktimestamp", TimestampType())
])
# Define the source of the stream
stream_df = spark \\
    .readStream \\
    .format("kafka") \\
   .option("kafka.bootstrap.servers", "localhost:9092") \\
   .option("subscribe", "clickstream") \\
    .load()
# Parse the JSON data
parsed_df = stream_df \\
    .select(from_json(col("value").cast("string"), schema).alias("parsed")) \\
    .select("parsed.*")
# Perform the windowed aggregation
windowed_df = parsed_df \\
    .groupBy(
        window(col("clicktimestamp"), "5 minutes"),
        col("user_id")
   ) \\
    .count() \\
    .withWatermark("window", "5 minutes") # Apply the watermark
# Define the sink
query = windowed_df \\
    .writeStream \\
    .outputMode("complete") \\
    .format("console") \\
    .start()
# Wait for the streaming query to finish
query.awaitTermination()
'''


def click(user: str, time: str) -> str:
    return "'" + json.dumps({"user_id": user, "clicktimestamp": f"2023-08-01T{time}Z"}) + "'"


def test_seed_004_clickstream_as_written_then_produce_topics_and_lag(tmp_path, remote_url, kafka_broker):
    clicks, backlog = f"clickstream_{uuid.uuid4().hex[:6]}", f"backlog_{uuid.uuid4().hex[:6]}"
    kafka_broker.create(clicks, 1)
    kafka_broker.create(backlog, 1)
    kafka_broker.produce(backlog, [str(i) for i in range(300)])
    script = tmp_path / "seed_004_watermark.py"
    script.write_text(SEED_CELL.replace("localhost:9092", kafka_broker.bootstrap).replace('"clickstream"',
                                                                                           f'"{clicks}"'))
    child = spawn("--remote", remote_url, "-i", str(script))
    repl = Repl(child)
    try:
        note = repl.expect(r"note: Kafka through [^\r\n]*\r\n", timeout=120)
        assert "sparkscope's own source and sink (confluent-kafka in the server's Python): the server has no " \
               "spark-sql-kafka connector" in note
        # the first batch printed: start() returned and the seed's awaitTermination() waits
        repl.expect(r"Batch: 0 \(console_\d+\)", timeout=120)
        child.sendintr()
        out = repl.prompt()
        assert re.search(r"Stopped waiting for console_\d+; it keeps running", out), out

        # "latest" offsets were taken when that first batch ran: these records come after it
        # batch 0 of the seed, typed live
        sent = repl.run(f":produce {clicks} {click('user1', '10:00:00')} {click('user2', '10:00:10')} "
                        f"{click('user1', '10:00:20')}")
        assert sent.strip().splitlines()[-1] == f"Sent 3 records to {clicks} at {kafka_broker.bootstrap}"
        # complete mode prints the whole result each batch; the three records may take one batch or two
        batch = r"\| user1 +\| 2 +\|"
        printed = sent if re.search(batch, sent) else sent + repl.expect(batch, timeout=90)  # above the prompt
        assert re.search(r"Batch: [1-9]\d* \(console_\d+\)", printed), printed

        topics = repl.run(f":topics {clicks}")
        assert re.search(rf"\| {clicks} +\| 1 +\| 3 +\| 0:3 +\|", topics), topics
        assert f"(1 topic at {kafka_broker.bootstrap})" in topics

        # a query limited to 5 records a trigger, 300 records behind: :queries shows how far
        repl.run(f'lagging = spark.readStream.format("kafka").option("kafka.bootstrap.servers", '
                 f'"{kafka_broker.bootstrap}").option("subscribe", "{backlog}").option("startingOffsets", "earliest")'
                 '.option("maxOffsetsPerTrigger", 5).load()')
        started = repl.run(":start lagging --trigger 1s")
        assert "Started lagging" in started

        def cells(table: str, first: str) -> list[str]:
            row = next((line for line in table.splitlines() if line.startswith(f"| {first} ")), "")
            return [cell.strip() for cell in row.strip("|").split("|")]

        def behind() -> int | None:
            table = repl.run(":queries")
            assert cells(table, "name")[-1] == "behind", table
            value = cells(table, "lagging")[-1]
            return int(value.replace(",", "")) if value not in ("", "-", "0") else None

        assert 0 < wait_for(behind, 90, every=1.0, what="lagging's lag in :queries") < 300

        # the dashboard has the column too, for Kafka readers
        child.send(":watch lagging\r")
        screen = Screen(child)

        def watched_lag(text: str) -> bool:
            row = screen.line_with("lagging")
            return "behind" in text and row is not None and re.search(r"\b\d{1,3}(,\d{3})*\s+[▁-█ ]", row) is not None

        screen.wait_for(watched_lag, 60, what="lagging's lag in :watch")
        header = next(line for line in screen.screen.display if "behind" in line)
        row = screen.line_with("lagging")
        at = header.index("behind") + len("behind")
        assert 0 < int(row[at - 9:at].strip().replace(",", "")) < 300, (header, row)
        child.send("q")
        repl.prompt()
    finally:
        child.sendcontrol("d")
        if child.expect([r"Stop (it|them)\? \[y/N\]", pexpect.EOF], timeout=60) == 0:
            child.send("y\r")
            child.expect(pexpect.EOF, timeout=60)
        assert "Traceback" not in clean(child.before or "")


def test_a_batch_write_to_kafka_as_the_guide_writes_it(remote_url, kafka_broker):
    """The integration guide's batch writes (df.write.format("kafka")…save(), with the topic as an option or as a
    column) on a server without Spark's connector: through sparkscope's own sink. Overwrite is refused as Spark's
    connector refuses it, in one line."""
    topic = f"batch_{uuid.uuid4().hex[:8]}"
    kafka_broker.create(topic)
    exact = '.option("kafka.linger.ms", "0").option("kafka.batch.num.messages", "1")'  # tansu counts batches
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    repl.run("df = spark.createDataFrame([('k1', 'one'), ('k2', 'two')], 'key string, value string')")
    said = repl.run(f'df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").write.format("kafka")'
                    f'.option("kafka.bootstrap.servers", "{kafka_broker.bootstrap}").option("topic", "{topic}"){exact}'
                    '.save()')
    assert "error" not in said and "Traceback" not in said, said
    said = repl.run(f'df.selectExpr("\'{topic}\' AS topic", "value").write.format("kafka")'
                    f'.option("kafka.bootstrap.servers", "{kafka_broker.bootstrap}"){exact}.save()')
    assert "error" not in said and "Traceback" not in said, said
    assert sorted(kafka_broker.first_values(topic, 4)) == ["one", "one", "two", "two"]  # tansu: values() can stop a record short
    refused = repl.run(f'df.write.format("kafka").option("kafka.bootstrap.servers", "{kafka_broker.bootstrap}")'
                       f'.option("topic", "{topic}").mode("overwrite").save()')
    errors = [line for line in refused.splitlines() if line.startswith("error: ")]
    assert errors == ["error: ValueError: Save mode Overwrite not allowed for Kafka. Allowed save modes are Append "
                      "and ErrorIfExists (default)."], refused
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def test_a_reattached_session_finds_its_kafka_cluster_for_topics_and_produce(tmp_path, remote_url, kafka_broker):
    """Issue 55 row 42: after --reattach, :topics and :produce said "No Kafka cluster to talk to", while the
    session that started the Kafka query found its cluster."""
    import signal

    topic = f"rejoined_{uuid.uuid4().hex[:6]}"
    kafka_broker.create(topic, 1)
    first = spawn("--remote", remote_url)
    repl = Repl(first)
    repl.prompt()
    repl.run(f'reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", '
             f'"{kafka_broker.bootstrap}").option("subscribe", "{topic}").load()')
    assert "Started reader" in repl.run(":start reader --trigger 1s", timeout=120)
    first.kill(signal.SIGKILL)  # no goodbye: its query keeps running in its session
    first.close(force=True)
    second = spawn("--remote", remote_url, "--reattach")
    again = Repl(second)
    try:
        again.prompt()
        sent = again.run(f":produce {topic} one two")
        # (the rejoin's own line may come beside it: the session opens in the background)
        assert f"Sent 2 records to {topic} at {kafka_broker.bootstrap}" in sent.strip().splitlines(), sent
        topics = again.run(f":topics {topic}")
        assert re.search(rf"\| {topic} +\| 1 +\| 2 +\| 0:2 +\|", topics), topics
        assert "Stopped reader" in again.run(":stop reader")
    finally:
        second.sendcontrol("d")
        if second.expect([r"Stop (it|them)\? \[y/N\]", pexpect.EOF], timeout=60) == 0:
            second.send("y\r")
            second.expect(pexpect.EOF, timeout=60)
