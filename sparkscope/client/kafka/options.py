"""The options of a Kafka source or sink, as Spark's connector reads them. Pure logic: no pyspark,
no confluent-kafka. Runs on the server too (shipped by value with the source)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

EARLIEST, LATEST = -2, -1  # as in Spark's per-partition JSON
POLL_TIMEOUT_MS = 120_000  # Spark's kafkaConsumer.pollTimeoutMs

# Spark's connector decides these itself and refuses them as kafka.* options
REFUSED = ("group.id", "auto.offset.reset", "key.deserializer", "value.deserializer", "enable.auto.commit",
           "interceptor.classes", "key.serializer", "value.serializer")


class KafkaOptionError(ValueError):
    """An option a Kafka source or sink cannot take, with what to write instead."""


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = str(options.get(key, str(default))).strip().lower()
    if value not in ("true", "false"):
        raise KafkaOptionError(f"{key} must be true or false, not '{options.get(key)}'")
    return value == "true"


def _count(options: Mapping[str, str], key: str) -> int | None:
    if options.get(key) is None:
        return None
    try:
        number = int(str(options[key]))
    except ValueError:
        raise KafkaOptionError(f"{key} must be a whole number, not '{options[key]}'") from None
    if number <= 0:
        raise KafkaOptionError(f"{key} must be positive, not {number}")
    return number


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """The kafka.* options, without the prefix: librdkafka's settings (bootstrap.servers, security.protocol…)."""
    lowered = {k.lower(): k for k in options}
    if "kafka.bootstrap.servers" not in lowered:
        raise KafkaOptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    config = {}
    for key, value in options.items():
        if not key.lower().startswith("kafka."):
            continue
        name = key[len("kafka."):]
        if name.lower() in REFUSED and name.lower() != "group.id":
            raise KafkaOptionError(f"Kafka option '{name}' is not supported: the source manages it itself")
        config[name] = str(value)
    return config


@dataclass(frozen=True)
class Subscription:
    """subscribe (topics), subscribePattern (a regex) or assign (topic → partitions): exactly one."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        if self.assigned:
            return topic in self.assigned
        return topic in self.topics

    def wanted(self, topic: str, partition: int) -> bool:
        return self.matches(topic) and (not self.assigned or partition in self.assigned[topic])

    def __str__(self) -> str:
        if self.pattern is not None:
            return f"subscribePattern {self.pattern}"
        if self.assigned:
            return "assign " + json.dumps({t: list(p) for t, p in self.assigned.items()})
        return "subscribe " + ",".join(self.topics)


def subscription(options: Mapping[str, str]) -> Subscription:
    given = [key for key in ("subscribe", "subscribePattern", "assign") if options.get(key)]
    if len(given) != 1:
        raise KafkaOptionError("One of the options 'subscribe', 'subscribePattern' or 'assign' must be specified"
                               + (f" (not {' and '.join(given)})" if given else ""))
    if given[0] == "subscribe":
        topics = tuple(t.strip() for t in str(options["subscribe"]).split(",") if t.strip())
        if not topics:
            raise KafkaOptionError("No topics to subscribe to: 'subscribe' is empty")
        return Subscription(topics=topics)
    if given[0] == "subscribePattern":
        try:
            re.compile(str(options["subscribePattern"]))
        except re.error as exc:
            raise KafkaOptionError(f"subscribePattern is not a valid pattern ({exc})") from None
        return Subscription(pattern=str(options["subscribePattern"]))
    try:
        assigned = json.loads(str(options["assign"]))
        parsed = {str(t): tuple(int(p) for p in parts) for t, parts in assigned.items()}
    except (ValueError, TypeError, AttributeError):
        raise KafkaOptionError(f"assign must be JSON like {{\"topicA\":[0,1]}}, not '{options['assign']}'") from None
    return Subscription(assigned=parsed)


def offsets_spec(options: Mapping[str, str], key: str, default: str) -> str | dict[str, dict[str, int]]:
    """startingOffsets / endingOffsets: "earliest", "latest", or JSON {"topic": {"0": 23, "1": -2}}."""
    text = str(options.get(key, default)).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        parsed = json.loads(text)
        return {str(t): {str(int(p)): int(o) for p, o in parts.items()} for t, parts in parsed.items()}
    except (ValueError, TypeError, AttributeError):
        raise KafkaOptionError(f"{key} must be earliest, latest or JSON like {{\"topicA\":{{\"0\":23,\"1\":-2}}}}, "
                               f"not '{text}'") from None


@dataclass(frozen=True)
class SourceOptions:
    client: dict[str, str]
    subscription: Subscription
    starting: str | dict[str, dict[str, int]]
    ending: str | dict[str, dict[str, int]]
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    min_partitions: int | None
    include_headers: bool
    poll_timeout_ms: int

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        client = client_config(options)
        client.setdefault("group.id", f"spark-kafka-source-{uuid.uuid4()}")
        return cls(client=client, subscription=subscription(options),
                   starting=offsets_spec(options, "startingOffsets", "latest"),
                   ending=offsets_spec(options, "endingOffsets", "latest"),
                   max_offsets_per_trigger=_count(options, "maxOffsetsPerTrigger"),
                   fail_on_data_loss=_flag(options, "failOnDataLoss", True),
                   min_partitions=_count(options, "minPartitions"),
                   include_headers=_flag(options, "includeHeaders", False),
                   poll_timeout_ms=_count(options, "kafkaConsumer.pollTimeoutMs") or POLL_TIMEOUT_MS)


@dataclass(frozen=True)
class SinkOptions:
    client: dict[str, str]
    topic: str | None  # the `topic` option; rows may name their own in a topic column

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        return cls(client=client_config(options), topic=options.get("topic") or None)
