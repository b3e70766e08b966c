"""sparkscope's own Kafka source and sink: Python data sources, for a server without Spark's connector.

Spark plans each batch through the stream reader in a Python process beside the driver (initialOffset,
latestOffset, partitions), and reads each offset range in a Python worker (read). Both need
confluent-kafka; neither needs sparkscope: the session ships this module by value. Rows come as Arrow
batches, in the schema of Spark's connector. Offsets are Spark's too ({"topic": {"0": 23}}), kept in the
query's checkpoint, so a restarted query goes on from its last committed batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter,
                                    DataSourceWriter, InputPartition, WriterCommitMessage)

from . import SOURCE_NAME
from .offsets import Range, begin, flatten, limit, nest, ranges, resolve
from .options import SinkOptions, SourceOptions

SCHEMA = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, "
          "timestampType INT")
HEADERS = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
ARROW_ROWS = 8192  # rows per Arrow batch handed to Spark
METADATA_TIMEOUT = 10.0  # as the client's own :topics: a broker that answers does so in milliseconds
PARTITION_EOF = -191  # librdkafka's RD_KAFKA_RESP_ERR__PARTITION_EOF (confluent_kafka.KafkaError._PARTITION_EOF)


class KafkaDataSource(DataSource):
    """format("sparkscope_kafka"): Spark's Kafka options and schema (headers with includeHeaders=true)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        include = str(self.options.get("includeHeaders", "false")).lower() == "true"
        return f"{SCHEMA}, {HEADERS}" if include else SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options))

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaBatchReader(SourceOptions.parse(self.options))

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaStreamWriter(SinkOptions.parse(self.options), [f.name for f in schema.fields])

    def writer(self, schema: Any, overwrite: bool) -> DataSourceWriter:
        if overwrite:  # Spark's connector's rule and words
            raise ValueError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                             "ErrorIfExists (default).")
        return KafkaBatchWriter(SinkOptions.parse(self.options), [f.name for f in schema.fields])


class OffsetRange(InputPartition):
    def __init__(self, piece: Range, options: SourceOptions):
        super().__init__(piece)
        self.piece = piece
        self.options = options


class KafkaDataLossError(RuntimeError):
    pass


class KafkaUnreachableError(RuntimeError):
    pass


def _unreachable(options: SourceOptions, exc: BaseException, doing: str) -> KafkaUnreachableError:
    """librdkafka's error (KafkaError{code=_TRANSPORT,…}) names neither the broker nor what to do."""
    error = exc.args[0] if exc.args else exc
    reason = getattr(error, "str", lambda: str(error))()
    bootstrap = options.client.get("bootstrap.servers", "?")
    return KafkaUnreachableError(f"Kafka at {bootstrap} did not answer {doing} ({reason}). Check the address and that "
                            "the broker runs; the query can be restarted from its checkpoint")


def _loss_error(losses: list[Any]) -> KafkaDataLossError:
    return KafkaDataLossError("Some data may have been lost: " + "; ".join(str(loss) for loss in losses) +
                              ". Set the source option failOnDataLoss to false to go on from the earliest offsets")


class _Metadata:
    """The partitions a subscription covers now, with their watermarks (one consumer, reused)."""

    def __init__(self, options: SourceOptions):
        from confluent_kafka import Consumer

        self._options = options
        self._consumer = Consumer({**options.client, "enable.auto.commit": "false"})

    def watermarks(self) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition

        from confluent_kafka import KafkaException

        subscription = self._options.subscription
        try:
            topics = self._consumer.list_topics(timeout=METADATA_TIMEOUT).topics
            wanted = [(name, part) for name, meta in topics.items()
                      if subscription.matches(name) and meta.error is None
                      for part in meta.partitions if subscription.wanted(name, part)]
            return {(name, part): self._consumer.get_watermark_offsets(TopicPartition(name, part),
                                                                        timeout=METADATA_TIMEOUT, cached=False)
                    for name, part in wanted}
        except KafkaException as exc:
            raise _unreachable(self._options, exc, f"within {METADATA_TIMEOUT:g} s for its topics' offsets") from None

    def close(self) -> None:
        self._consumer.close()


class KafkaStreamReader(DataSourceStreamReader):
    def __init__(self, options: SourceOptions):
        self.options = options
        self._metadata: _Metadata | None = None

    @property
    def metadata(self) -> _Metadata:
        if self._metadata is None:
            self._metadata = _Metadata(self.options)
        return self._metadata

    def initialOffset(self) -> dict:
        return nest(resolve(self.options.starting, self.metadata.watermarks()))

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        rows = self.options.max_offsets_per_trigger
        return ReadMaxRows(rows) if rows else ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit_: Any = None) -> dict:
        watermarks = self.metadata.watermarks()
        if start is None:  # Spark 4.0-4.2 asks without admission control: all that is there (OLD_SPARK_NOTE)
            return nest({tp: high for tp, (_, high) in watermarks.items()})
        begin_at, losses = begin(flatten(start), watermarks)
        if losses and self.options.fail_on_data_loss:
            raise _loss_error(losses)
        latest = {tp: high for tp, (_, high) in watermarks.items()}
        max_rows = getattr(limit_, "max_rows", None)
        return nest(limit(begin_at, latest, max_rows))

    def reportLatestOffset(self) -> dict:
        return nest({tp: high for tp, (_, high) in self.metadata.watermarks().items()})

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        start_at, end_at = flatten(start), flatten(end)
        if any(tp not in start_at or start_at[tp] > offset for tp, offset in end_at.items()):
            watermarks = self.metadata.watermarks()  # a new partition, or offsets that went back
            start_at, _ = begin(start_at, {tp: w for tp, w in watermarks.items() if tp in end_at})
        return [OffsetRange(piece, self.options) for piece in ranges(start_at, end_at, self.options.min_partitions)]

    def read(self, partition: OffsetRange) -> Iterator[Any]:  # type: ignore[override]
        return read_range(partition.piece, partition.options)

    def commit(self, end: dict) -> None:
        pass  # like Spark's connector, the offsets live in the checkpoint, not in a consumer group

    def stop(self) -> None:
        if self._metadata is not None:
            self._metadata.close()
            self._metadata = None


class KafkaBatchReader(DataSourceReader):
    """spark.read: from startingOffsets (earliest by default) to endingOffsets (latest)."""

    def __init__(self, options: SourceOptions):
        self.options = options

    def partitions(self) -> list[OffsetRange]:
        metadata = _Metadata(self.options)
        try:
            watermarks = metadata.watermarks()
        finally:
            metadata.close()
        starting = "earliest" if self.options.starting == "latest" else self.options.starting
        start_at = resolve(starting, watermarks)
        end_at = resolve(self.options.ending, watermarks, "endingOffsets")
        return [OffsetRange(piece, self.options) for piece in ranges(start_at, end_at, self.options.min_partitions)]

    def read(self, partition: OffsetRange) -> Iterator[Any]:  # type: ignore[override]
        return read_range(partition.piece, partition.options)


def read_range(piece: Range, options: SourceOptions) -> Iterator[Any]:
    """The records of one offset range, as Arrow batches of Spark's Kafka schema."""
    import pyarrow as pa

    names = ("key", "value", "offset", "timestamp", "timestampType", "headers")
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for message in _messages(piece, options):
        kind, stamp = message.timestamp()
        columns["key"].append(message.key())
        columns["value"].append(message.value())
        columns["offset"].append(message.offset())
        columns["timestamp"].append(stamp * 1000 if stamp >= 0 else None)
        columns["timestampType"].append(max(kind - 1, 0))  # librdkafka: 1 create, 2 log append; Spark: 0, 1
        if options.include_headers:
            columns["headers"].append([{"key": k, "value": v} for k, v in (message.headers() or [])])
        if len(columns["offset"]) >= ARROW_ROWS:
            yield _arrow(pa, columns, piece, options.include_headers)
            columns = {name: [] for name in names}
    if columns["offset"]:
        yield _arrow(pa, columns, piece, options.include_headers)


def _messages(piece: Range, options: SourceOptions) -> Iterator[Any]:
    """The messages from piece.start up to piece.end, fetched a batch at a time; records missing on the way
    are lost data (an error, unless failOnDataLoss is false)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({**options.client, "enable.auto.commit": "false", "enable.partition.eof": "true"})
    where = f"partition {piece.topic}-{piece.partition}"
    next_offset = piece.start
    try:
        consumer.assign([TopicPartition(piece.topic, piece.partition, piece.start)])
        while next_offset < piece.end:
            batch: list[Any] = consumer.consume(min(ARROW_ROWS, piece.end - next_offset),
                                                options.poll_timeout_ms / 1000)
            if not batch:  # nothing within the poll timeout, not even the end of the partition
                raise _unreachable(options, TimeoutError(f"no record within {options.poll_timeout_ms / 1000:g} s"),
                                   f"while reading records {next_offset}-{piece.end - 1} of {where}")
            ended = False
            for message in batch:
                if message.error() is not None:
                    if message.error().code() != PARTITION_EOF:
                        raise _unreachable(options, KafkaException(message.error()), f"while reading {where}")
                    ended = True
                    break
                offset = message.offset()
                if offset >= piece.end:
                    return
                if offset > next_offset and options.fail_on_data_loss:
                    raise _loss_error([f"records {next_offset}-{offset - 1} of {where} are gone"])
                next_offset = offset + 1
                yield message
            if ended and next_offset < piece.end:
                if options.fail_on_data_loss:
                    raise _loss_error([f"{where} ended at offset {next_offset}, before the batch's end {piece.end}"])
                return
    finally:
        consumer.close()


def _arrow(pa: Any, columns: Mapping[str, list[Any]], piece: Range, headers: bool) -> Any:
    count = len(columns["offset"])
    arrays = [pa.array(columns["key"], pa.binary()), pa.array(columns["value"], pa.binary()),
              pa.array([piece.topic] * count, pa.string()), pa.array([piece.partition] * count, pa.int32()),
              pa.array(columns["offset"], pa.int64()), pa.array(columns["timestamp"], pa.timestamp("us", tz="UTC")),
              pa.array(columns["timestampType"], pa.int32())]
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    if headers:
        kind = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
        arrays.append(pa.array(columns["headers"], kind))
        names.append("headers")
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _check_columns(options: SinkOptions, columns: list[str]) -> None:
    """Spark's connector's own checks, with its words."""
    lowered = [c.lower() for c in columns]
    if "value" not in lowered:
        raise ValueError("Required attribute 'value' not found: select a column named value (string or binary)")
    if options.topic is None and "topic" not in lowered:
        raise ValueError("topic option required when no 'topic' attribute is present. Use the topic option "
                         "for setting a topic")


def _produce(options: SinkOptions, rows: Iterator[Any]) -> SentRecords:
    """Each row to Kafka: value (required), key, topic (or the topic option), partition, headers; flushed."""
    from confluent_kafka import Producer

    producer = Producer(options.client)
    sent = 0
    for row in rows:
        record = row.asDict()
        topic = options.topic or record.get("topic")
        if topic is None:
            raise ValueError("null topic present in the data. Use the topic option for setting a topic")
        extra: dict[str, Any] = {}
        if record.get("partition") is not None:
            extra["partition"] = int(record["partition"])
        if record.get("headers"):
            extra["headers"] = [(h["key"], _bytes(h["value"])) for h in record["headers"]]
        while True:
            try:
                producer.produce(topic, value=_bytes(record.get("value")), key=_bytes(record.get("key")), **extra)
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.1)
        sent += 1
        producer.poll(0)
    left = producer.flush(METADATA_TIMEOUT)
    if left:
        raise RuntimeError(f"{left} records could not be delivered to Kafka within {METADATA_TIMEOUT:g} s")
    return SentRecords(sent)


class KafkaStreamWriter(DataSourceStreamWriter):
    """writeStream.format("kafka"): each batch's rows to Kafka (see _produce)."""

    def __init__(self, options: SinkOptions, columns: list[str]):
        _check_columns(options, columns)
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _produce(self.options, iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 - pyspark's name
        pass  # each task flushed its records: like Spark's connector, the sink is at least once

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        pass


class KafkaBatchWriter(DataSourceWriter):
    """df.write.format("kafka").save(): the rows to Kafka (see _produce), as Spark's connector writes them."""

    def __init__(self, options: SinkOptions, columns: list[str]):
        _check_columns(options, columns)
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _produce(self.options, iterator)


class SentRecords(WriterCommitMessage):
    def __init__(self, count: int):
        self.count = count


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return str(value).encode()
