"""Real-time mode against micro-batch: the end-to-end latency of one Kafka query at a steady 1,000 records/s.

A real broker (tansu) and a Spark 4.2 server with Spark's Kafka connector (`sparkscope server start --kafka`, from the
4.2 venv `make test` builds: .venv-servers/spark-4.2), on this machine's 2 cores. A producer thread writes RATE
records a second, in 10 ms ticks, to a topic of one partition. The query is the same on both sides:

    Kafka -> filter (value not like '%skip%', a record in ten) -> sparkscope's default sink

with the default trigger (micro-batch: a batch starts as soon as the previous one ends) and with trigger="realtime"
(5 s batches, each record written to the sink as it arrives), each query in a session of its own. Both read with
kafka.fetch.max.wait.ms=10: tansu answers a fetch only when that wait ends, even when records came in meanwhile (a
Kafka broker answers as soon as it has fetch.min.bytes), so Kafka's default 500 ms would be most of the latency of
either mode. The broker's own floor is measured in each round too: a bare confluent-kafka consumer in this process
(fetch.wait.max.ms=10), from each record's timestamp to its arrival here. The latency is sparkscope's own
measure (sink/Latency.java): from each record's Kafka timestamp (set by the producer as it sends) to the moment the sink
has it: a micro-batch's commit, or in real time the row's arrival in the ring. Each query reads a topic of its own (tansu's memory storage answers
slower as a topic grows: a bare consumer's p50 went from 2 to 20 ms after 100 s on one topic). Each query warms up
for WARMUP seconds,
then counts every record of the next WINDOW seconds (the ring's figures since a reset, within 4%). p50 and p99 are the
medians of ROUNDS rounds of each mode, which alternate.

Goal (issue 62): real-time p99 at most 0.25x micro-batch's p99, and real-time p50 under 100 ms.
Run: .venv/bin/python benchmarks/bench_realtime.py [ROUNDS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ROOT

VENV = ROOT / ".venv-servers" / "spark-4.2"
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
RATE = 1_000  # records a second
WARMUP = 15.0  # seconds before the count starts
WINDOW = 30.0  # seconds counted


class SteadyProducer:
    """RATE records a second to its `topic` (which may change), RATE/100 every 10 ms, until stopped; each record's
    Kafka timestamp is the moment it is sent (CreateTime)."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Producer

        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
        self.topic = topic
        self._stop = threading.Event()
        self.sent = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SteadyProducer:
        self._thread.start()
        return self

    def _run(self) -> None:
        per_tick, tick = RATE // 100, 0.01
        next_at = time.monotonic()
        while not self._stop.is_set():
            for _ in range(per_tick):
                self.sent += 1
                self._producer.produce(self.topic, b"skip" if self.sent % 10 == 0 else b"record-%d" % self.sent)
            self._producer.poll(0)
            next_at += tick
            self._stop.wait(max(0.0, next_at - time.monotonic()))  # the next tick, on the clock
        self._producer.flush(10)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def consumer_floor(bootstrap: str, topic: str, seconds: float = 10.0) -> tuple[float, float]:
    """p50 and p99 of a bare consumer's latency (ms) over `seconds`, reading what the producer sends from now on."""
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-floor", "fetch.wait.max.ms": 10,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = consumer.poll(0.1)  # each record as it comes (consume(n) would wait to fill n)
        if message is not None and message.error() is None:
            latencies.append(time.time() * 1000 - message.timestamp()[1])
    consumer.close()
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]


def one_round(ss, bootstrap: str, topic: str, trigger: str | None, run: int):
    """The latency of WINDOW seconds of records, after WARMUP, of the query with `trigger` (None: micro-batch)."""
    from pyspark.sql import functions as F

    lines = (ss.spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("kafka.fetch.max.wait.ms", 10).load()
             .select(F.col("value").cast("string").alias("line")).where(~F.col("line").like("%skip%")))
    name = f"{trigger.replace(':', '_') if trigger else 'mb'}_{run}"
    query = ss.start(lines, name, trigger=trigger) if trigger else ss.start(lines, name)
    sink = ss._bounded_sink  # the ring's figures since a reset: sparkscope's own, not a public verb
    try:
        deadline = time.monotonic() + WARMUP
        while time.monotonic() < deadline:  # warming up, while the query runs
            assert query.is_active, query.exception
            time.sleep(0.5)
        sink.total_latency(query.view, reset=True)
        started = time.monotonic()
        while time.monotonic() - started < WINDOW:
            assert query.is_active, query.exception
            time.sleep(0.5)  # the counting window, on the clock
        figures = sink.total_latency(query.view)
        last = query.progress
        seen = f"{name}: status {query.status}, last progress batch {last.batch_id if last else None} at " \
               f"{last.timestamp if last else None}, its latency {last.latency if last else None}"
    finally:
        query.stop()
    assert figures is not None and figures.records > 0.8 * RATE * 0.9 * WINDOW, \
        f"{figures and figures.records} records, {figures}; {seen}"
    return figures


def start_server(scratch: Path) -> tuple[str, str, dict[str, str]]:
    """The 4.2 server with Spark's Kafka connector, in a state dir of this run (the connector from the user's own
    sparkscope cache, fetched there the first time)."""
    from sparkscope.server.ports import free_port

    env = {key: value for key, value in os.environ.items() if key not in ("SPARK_CONNECT_AUTHENTICATE_TOKEN",
                                                                        "VIRTUAL_ENV", "PYTHONPATH")}
    env["XDG_STATE_HOME"] = str(scratch / "state")
    env["SPARKSCOPE_CLASS_CACHE"] = "off"  # no class archive recorded by a second JVM while the figures are taken
    port = free_port()
    started = subprocess.run([str(VENV / "bin" / "sparkscope"), "server", "start", "--kafka", "--port", str(port)],
                             capture_output=True, text=True, env=env, timeout=600)
    if started.returncode != 0:
        raise SystemExit(f"the 4.2 server did not start: {started.stdout}{started.stderr}")
    token = (scratch / "state" / "sparkscope" / "token").read_text().strip()
    return f"sc://localhost:{port}", token, env


def main() -> None:
    import sparkscope
    from tests.kafka_broker import Broker

    if not (VENV / ".installed").exists():
        raise SystemExit(f"{VENV} is missing: make test-kafka builds it")
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        broker = Broker(scratch / "tansu.log")
        producer = env = None
        try:
            url, token, env = start_server(scratch)
            broker.create("bench_rt_floor_0", 1)
            producer = SteadyProducer(broker.bootstrap, "bench_rt_floor_0").start()
            modes = {"micro-batch": None, "real-time": "realtime"}
            results: dict[str, list] = {mode: [] for mode in modes}
            floors: list[tuple[float, float]] = []
            for run in range(ROUNDS):
                if run:
                    broker.create(f"bench_rt_floor_{run}", 1)
                    producer.topic = f"bench_rt_floor_{run}"
                floors.append(consumer_floor(broker.bootstrap, producer.topic))
                print(f"round {run + 1} broker floor: a bare consumer's p50 {floors[-1][0]:.1f} ms, "
                      f"p99 {floors[-1][1]:.1f} ms", flush=True)
                for mode, trigger in modes.items():
                    topic = f"bench_rt_{run}_{'mb' if trigger is None else 'rt'}"
                    broker.create(topic, 1)
                    producer.topic = topic
                    with sparkscope.connect(url, token=token) as ss:  # a session of its own for each query
                        figures = one_round(ss, broker.bootstrap, topic, trigger, run)
                    results[mode].append(figures)
                    print(f"round {run + 1} {mode:<13}: {figures.records:,} records, p50 {figures.p50_ms:.1f} ms, "
                          f"p90 {figures.p90_ms:.1f} ms, p99 {figures.p99_ms:.1f} ms, max {figures.max_ms:.0f} ms",
                          flush=True)
        finally:
            if producer is not None:
                producer.stop()
            if env is not None:
                subprocess.run([str(VENV / "bin" / "sparkscope"), "server", "stop"], capture_output=True, env=env,
                               timeout=120)
            broker.stop()
    p50 = {mode: statistics.median(f.p50_ms for f in figures) for mode, figures in results.items()}
    p99 = {mode: statistics.median(f.p99_ms for f in figures) for mode, figures in results.items()}
    print(f"\nKafka -> filter -> sparkscope's sink at {RATE:,} records/s, {WINDOW:g} s counted per round, medians of "
          f"{ROUNDS} rounds:")
    for mode in results:
        print(f"  {mode:<13}: p50 {p50[mode]:.1f} ms, p99 {p99[mode]:.1f} ms")
    print(f"  a bare consumer (the broker's floor): p50 {statistics.median(f[0] for f in floors):.1f} ms, "
          f"p99 {statistics.median(f[1] for f in floors):.1f} ms")
    print(f"  real-time p99 / micro-batch p99: {p99['real-time'] / p99['micro-batch']:.2f}x (goal at most 0.25x); "
          f"real-time p50 / micro-batch p50: {p50['real-time'] / p50['micro-batch']:.2f}x; real-time p50 "
          f"{p50['real-time']:.1f} ms (goal under 100 ms)")


if __name__ == "__main__":
    main()
