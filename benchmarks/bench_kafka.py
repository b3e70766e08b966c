"""Reading Kafka: Spark's own connector and sparkscope's own Kafka source, in streaming queries, against a bare
consumer, into a count and into sparkscope's default sink.

A real broker (tansu, from the test extra) holds RECORDS JSON records of about 100 bytes in a topic of 4 partitions.
Two servers, one after the other (one Spark JVM at a time on 2 cores):
- sparkscope's own source, on the embedded server of this venv (pyspark 4.3, with the Kafka extra: its records
  come through Python workers on the server, as Arrow batches);
- Spark's connector, on a Spark 4.2 server started with `sparkscope server start --kafka` from the 4.2 venv that
  `make test-kafka` builds (Maven Central here serves Spark's artifacts up to 4.2.0).
Each round, on each server, reads the whole topic three ways:
- bare consumer: one confluent-kafka Consumer in this process, all partitions at once, counting the records (what
  a script without Spark does, and the floor for any reader built on librdkafka);
- into a count: from_json and a count per user, trigger availableNow, from start() to the query's end;
- into the default sink: from_json's columns into sparkscope's bounded sink (its newest 10,000 rows), availableNow.
Figures: records per second, medians of RUNS rounds, and each reader as a ratio of the bare consumer's rate in the
same rounds on the same machine (1.0x: as fast as the bare consumer).
Run: make bench  (or .venv/bin/python benchmarks/bench_kafka.py [RECORDS])
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import private_server

RECORDS = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
RUNS = 3
TOPIC = "bench"


def bare_consumer(bootstrap: str) -> float:
    """Every record of the topic, all partitions assigned at once, until each reports its end."""
    from confluent_kafka import Consumer, TopicPartition

    started = time.perf_counter()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(TOPIC, partition, 0) for partition in range(4)])
    seen, ended = 0, set()
    while len(ended) < 4:
        for message in consumer.consume(10_000, timeout=1):
            if message.error() is None:
                seen += 1
            elif message.error().code() == -191:  # _PARTITION_EOF: this partition is read to its end
                ended.add(message.partition())
    consumer.close()
    assert seen == RECORDS, seen
    return time.perf_counter() - started


def parsed(ss, bootstrap: str, connector: bool):
    from pyspark.sql import functions as F

    if connector:
        reader = (ss.spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", TOPIC).option("startingOffsets", "earliest").load())
    else:
        reader = ss.source.kafka(bootstrap, subscribe=TOPIC, starting_offsets="earliest")
    return reader.select(F.from_json(F.col("value").cast("string"), "user STRING, amount INT, note STRING").alias("t"))


def into_count(ss, bootstrap: str, run: int, connector: bool) -> float:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    df = parsed(ss, bootstrap, connector).groupBy("t.user").agg(F.count("*").alias("n"))
    query = ss.start(df, f"bench_count_{run}", sink="memory", trigger="available-now")
    query.await_termination()
    elapsed = time.perf_counter() - started
    total = sum(row[1] for row in ss.peek(query.name, 100).rows)
    assert total == RECORDS, total
    return elapsed


def into_default_sink(ss, bootstrap: str, run: int, connector: bool) -> float:
    started = time.perf_counter()
    query = ss.start(parsed(ss, bootstrap, connector).select("t.*"), f"bench_sink_{run}", trigger="available-now")
    query.await_termination()
    elapsed = time.perf_counter() - started
    read = sum(p.input_rows for p in query.history if p.ran)
    assert read == RECORDS, read
    assert len(ss.peek(query.name, 5).rows) == 5
    return elapsed


def rounds(ss, bootstrap: str, connector: bool) -> dict[str, list[float]]:
    """RUNS rounds of the three readers, after a warm-up (the server's first Python workers, its first plans)."""
    into_count(ss, bootstrap, 0, connector)
    into_default_sink(ss, bootstrap, 0, connector)
    times: dict[str, list[float]] = {"bare consumer": [], "into a count": [], "into the default sink": []}
    for run in range(1, RUNS + 1):
        times["bare consumer"].append(bare_consumer(bootstrap))
        times["into a count"].append(into_count(ss, bootstrap, run, connector))
        times["into the default sink"].append(into_default_sink(ss, bootstrap, run, connector))
        print(f"  round {run}: " + ", ".join(f"{what} {spent[-1]:.2f} s" for what, spent in times.items()),
              flush=True)
    return times


def connector_server(scratch: Path):
    """The 4.2 server with Spark's connector (sparkscope server start --kafka), in a state dir of this run."""
    import contextlib
    import os
    import subprocess

    from sparkscope.server.ports import free_port

    venv = Path(__file__).resolve().parent.parent / ".venv-servers" / "spark-4.2"
    if not (venv / ".installed").exists():
        raise SystemExit(f"{venv} is missing: make test-kafka builds it")
    env = {key: value for key, value in os.environ.items() if key not in ("SPARK_CONNECT_AUTHENTICATE_TOKEN",
                                                                        "VIRTUAL_ENV", "PYTHONPATH")}
    env["XDG_STATE_HOME"] = str(scratch / "state")
    env["SPARKSCOPE_CLASS_CACHE"] = "off"  # no class archive recorded by a second JVM while the figures are taken
    port = free_port()

    @contextlib.contextmanager
    def running():
        started = subprocess.run([str(venv / "bin" / "sparkscope"), "server", "start", "--kafka", "--port", str(port)],
                                 capture_output=True, text=True, env=env, timeout=600)
        if started.returncode != 0:
            raise SystemExit(f"the 4.2 server did not start: {started.stdout}{started.stderr}")
        try:
            yield f"sc://localhost:{port}", (scratch / "state" / "sparkscope" / "token").read_text().strip()
        finally:
            subprocess.run([str(venv / "bin" / "sparkscope"), "server", "stop"], capture_output=True, env=env,
                           timeout=120)

    return running()


def main() -> None:
    import sparkscope
    from tests.kafka_broker import Broker

    import os

    os.environ["SPARKSCOPE_CLASS_CACHE"] = "off"  # no class archive recorded by a second JVM during the rounds
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        broker = Broker(Path(scratch) / "tansu.log")
        try:
            broker.create(TOPIC, 4)
            started = time.perf_counter()
            broker.produce(TOPIC, [json.dumps({"user": f"user{i % 10}", "amount": i, "note": "x" * 50})
                                   for i in range(RECORDS)])
            print(f"produced {RECORDS:,} records in {time.perf_counter() - started:.1f} s (one per request)")
            print("sparkscope's own source (pyspark 4.3 server):")
            with private_server() as url, sparkscope.connect(url) as ss:
                results["sparkscope's own source"] = rounds(ss, broker.bootstrap, connector=False)
            print("Spark's connector (Spark 4.2 server, sparkscope server start --kafka):")
            with connector_server(Path(scratch)) as (url, token), sparkscope.connect(url, token=token) as ss:
                assert "Spark's connector" in ss.server.kafka.describe(), ss.server.kafka.describe()
                results["Spark's connector"] = rounds(ss, broker.bootstrap, connector=True)
        finally:
            broker.stop()
    print(f"\nreading {RECORDS:,} records, medians of {RUNS} rounds (records/s; ratio: of the bare consumer's rate "
          "in the same rounds):")
    for reader, times in results.items():
        bare = RECORDS / statistics.median(times["bare consumer"])
        for what in ("into a count", "into the default sink"):
            rate = RECORDS / statistics.median(times[what])
            print(f"  {reader} {what}: {rate:,.0f}/s, {rate / bare:.2f}x the bare consumer ({bare:,.0f}/s)")


if __name__ == "__main__":
    main()
