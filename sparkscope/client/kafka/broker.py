"""The client's own look at a Kafka cluster: its topics with partitions and offsets, and producing test
records. Needs confluent-kafka on this machine (pip install 'sparkscope[kafka]')."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ServerUnreachable, UnsupportedOperation

TIMEOUT = 10.0
# One record per produce request: a test broker (tansu with memory storage) counts its high watermark in
# batches, not records, so a batch of several records would show as one to every reader's planning
EXACT_OFFSETS = {"linger.ms": "0", "batch.num.messages": "1"}


def _kafka() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise UnsupportedOperation("Talking to Kafka from here needs confluent-kafka",
                                   "Install it: pip install 'sparkscope[kafka]'", code="no_kafka_client") from None
    return confluent_kafka


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    earliest: int
    latest: int

    @property
    def records(self) -> int:
        return self.latest - self.earliest


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: list[PartitionInfo]

    @property
    def latest(self) -> int:
        return sum(p.latest for p in self.partitions)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)


def _config(bootstrap: str, extra: dict[str, str] | None) -> dict[str, str]:
    if not bootstrap:
        raise ConfigError("No Kafka bootstrap servers",
                          "Give them with --bootstrap host:port, or set kafka_bootstrap in your profile",
                          code="no_bootstrap")
    # librdkafka writes its own log lines to stderr, info ones included ("Purging 1 unserved events from
    # background queue" as a producer closes): only warnings and errors are the user's business
    return {"bootstrap.servers": bootstrap, "log_level": "4", **(extra or {})}


TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic_name(name: str) -> str:
    """`name`, when Kafka accepts it as a topic name (ASCII letters, digits, '.', '_' and '-'; 1 to 249 of
    them; not '.' or '..'), else ConfigError saying which rule it breaks."""
    if not name:
        problem = "is empty"
    elif len(name) > 249:
        problem = f"has {len(name)} characters (Kafka allows 249)"
    elif name in (".", ".."):
        problem = "is not allowed by Kafka"
    elif not TOPIC_NAME.fullmatch(name):
        bad = "".join(sorted({c for c in name if not re.fullmatch(r"[a-zA-Z0-9._-]", c)}))
        problem = f"holds {bad!r}, which Kafka does not allow"
    else:
        return name
    raise ConfigError(f"The topic name {name!r} {problem}",
                      "Topic names use ASCII letters, digits, '.', '_' and '-'", code="bad_topic")


def _unreachable(bootstrap: str, exc: BaseException) -> ServerUnreachable:
    return ServerUnreachable(f"Kafka at {bootstrap} did not answer within {TIMEOUT:g} s ({exc})",
                             "Check the address and that the broker runs", code="kafka_unreachable")


def _matches(name: str, pattern: str) -> bool:
    """A topic name against `:topics PATTERN`: a glob when it has one of * ? [ (orders-*), else a part of the name."""
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern) if any(c in pattern for c in "*?[") else pattern in name


def topics(bootstrap: str, pattern: str | None = None, config: dict[str, str] | None = None) -> list[TopicInfo]:
    """Every topic (or those whose name contains `pattern`), with each partition's earliest and latest
    offset, internal topics left out."""
    kafka = _kafka()
    consumer = kafka.Consumer({**_config(bootstrap, config), "group.id": "sparkscope-topics",
                               "enable.auto.commit": "false"})
    try:
        try:
            metadata = consumer.list_topics(timeout=TIMEOUT)
        except kafka.KafkaException as exc:
            raise _unreachable(bootstrap, exc) from exc
        out = []
        for name in sorted(metadata.topics):
            if name.startswith("__") or (pattern and not _matches(name, pattern)):
                continue
            parts = []
            for part in sorted(metadata.topics[name].partitions):
                low, high = consumer.get_watermark_offsets(kafka.TopicPartition(name, part), timeout=TIMEOUT,
                                                           cached=False)
                parts.append(PartitionInfo(part, low, high))
            out.append(TopicInfo(name, parts))
        return out
    finally:
        consumer.close()


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    kafka = _kafka()
    check_topic_name(name)
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(dict[str, Any](_config(bootstrap, config)))
    for future in admin.create_topics([NewTopic(name, partitions, 1)], request_timeout=TIMEOUT).values():
        try:
            future.result(TIMEOUT)
        except kafka.KafkaException as exc:
            if exc.args and getattr(exc.args[0], "code", lambda: None)() == kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                raise ConfigError(f"Topic {name} exists already", "Produce to it, or pick another name",
                                  code="topic_exists") from None
            raise _unreachable(bootstrap, exc) from exc


def records_from_file(path: str | Path) -> Iterator[tuple[str | None, str]]:
    """(key, value) per line of a JSON-lines file: an object with "value" (and "key") gives those; any
    other line is sent as it is, without a key."""
    try:
        lines = Path(path).expanduser().read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"Cannot read {path} ({exc.strerror})", "Give a JSON-lines file", code="bad_file") from None
    for line in lines:
        if not line.strip():
            continue
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "value" in parsed:
            value = parsed["value"]
            key = parsed.get("key")
            yield (None if key is None else str(key), value if isinstance(value, str) else json.dumps(value))
        else:
            yield None, line


class Producer:
    """Test records to a topic, one per request (exact offsets on any broker), at most `rate` a second."""

    def __init__(self, bootstrap: str, config: dict[str, str] | None = None):
        self._kafka = _kafka()
        self._bootstrap = bootstrap
        self._producer = self._kafka.Producer({**_config(bootstrap, config), **EXACT_OFFSETS})
        self._errors: list[str] = []

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append(str(error))

    def send(self, topic: str, records: Iterable[tuple[str | None, str]], rate: float | None = None,
             stop: Callable[[], bool] = lambda: False, clock: Callable[[], float] = time.monotonic) -> int:
        """Send (key, value) records; returns how many were delivered. `rate`: records a second at most."""
        check_topic_name(topic)
        started = clock()
        sent = 0
        for key, value in records:
            if stop():
                break
            if rate:
                ahead = started + sent / rate - clock()
                if ahead > 0:
                    time.sleep(ahead)  # pacing the producer, not waiting on anything
            self._produce(topic, key, value)
            sent += 1
        left = self._producer.flush(TIMEOUT)
        if left or self._errors:
            problem = self._errors[0] if self._errors else f"{left} records not acknowledged"
            raise _unreachable(self._bootstrap, RuntimeError(problem))
        return sent

    def _produce(self, topic: str, key: str | None, value: str) -> None:
        while True:
            try:
                self._producer.produce(topic, value=value.encode(), key=None if key is None else key.encode(),
                                       on_delivery=self._delivered)
                self._producer.poll(0)
                return
            except BufferError:
                self._producer.poll(0.1)
