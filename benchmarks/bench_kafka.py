"""Reading Kafka: sparkscope's own Kafka source in a streaming query, against a bare consumer.

A real broker (tansu, from the test extra) holds RECORDS JSON records of about 100 bytes in a topic of
4 partitions. Each round reads them all, twice:
- bare consumer: one confluent-kafka Consumer in this process, partition by partition, counting the
  records (what a script without Spark does, and the floor for any reader built on librdkafka)
- sparkscope: ss.source.kafka(…, starting_offsets="earliest") parsed with from_json and counted per
  user, as a query with trigger availableNow, from start() to its end (planning, Arrow batches out of
  the server's Python workers, the aggregation)
The figure is sparkscope's time as a ratio to the bare consumer's, medians of RUNS rounds, and the
records per second each reached. Spark's own connector cannot be downloaded here (no Maven Central),
so plain pyspark has no Kafka reader to compare with.
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


def sparkscope_source(ss, bootstrap: str, run: int) -> float:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    df = ss.source.kafka(bootstrap, subscribe=TOPIC, starting_offsets="earliest") \
        .select(F.from_json(F.col("value").cast("string"), "user STRING, amount INT").alias("t")) \
        .groupBy("t.user").agg(F.count("*").alias("n"))
    query = ss.start(df, f"bench_kafka_{run}", sink="memory", trigger="available-now")
    query.await_termination()
    elapsed = time.perf_counter() - started
    total = sum(row[1] for row in ss.peek(query.name, 100).rows)
    assert total == RECORDS, total
    return elapsed


def main() -> None:
    import sparkscope
    from tests.kafka_broker import Broker

    with tempfile.TemporaryDirectory() as scratch:
        broker = Broker(Path(scratch) / "tansu.log")
        try:
            broker.create(TOPIC, 4)
            started = time.perf_counter()
            broker.produce(TOPIC, [json.dumps({"user": f"user{i % 10}", "amount": i, "note": "x" * 50})
                                   for i in range(RECORDS)])
            print(f"produced {RECORDS:,} records in {time.perf_counter() - started:.1f} s (one per request)")
            with private_server() as url, sparkscope.connect(url) as ss:
                sparkscope_source(ss, broker.bootstrap, 0)  # warm-up: the server's first Python workers
                bare, ours = [], []
                for run in range(RUNS):
                    bare.append(bare_consumer(broker.bootstrap))
                    ours.append(sparkscope_source(ss, broker.bootstrap, run + 1))
                    print(f"round {run + 1}: bare consumer {bare[-1]:.2f} s, sparkscope {ours[-1]:.2f} s")
        finally:
            broker.stop()
    b, o = statistics.median(bare), statistics.median(ours)
    print(f"\nreading {RECORDS:,} records (median of {RUNS}): bare consumer {b:.2f} s ({RECORDS / b:,.0f}/s), "
          f"sparkscope's Kafka source {o:.2f} s ({RECORDS / o:,.0f}/s): {o / b:.1f}x the bare consumer")


if __name__ == "__main__":
    main()
