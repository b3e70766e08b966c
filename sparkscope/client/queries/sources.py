"""Streaming sources: `ss.source.rate(...)`, `.files(...)`, `.socket(...)`, `.table(...)`, `.kafka(...)`, and
`.memory(...)`, the one a test feeds (memory_source.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..error_reading import translate, translated
from ..paths import for_server
from .memory_source import MemorySource
from .server_jar import ServerJar

if TYPE_CHECKING:  # pragma: no cover
    from ..kafka.connector import KafkaSupport
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.types import StructType

FILE_FORMATS = ("json", "csv", "parquet", "text", "orc")
PARSE_MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")


class Sources:
    def __init__(self, spark: Any, kafka: KafkaSupport, same_machine: bool = False,
                 jar: ServerJar | None = None):
        self._spark = spark
        self._kafka = kafka
        self._same_machine = same_machine
        self._jar = jar or ServerJar(spark)
        self.fed: list[MemorySource] = []  # the memory sources made here: they go when the session closes

    def memory(self, schema: str | StructType, *, grace: str | float | None = None) -> MemorySource:
        """A source a test feeds batch by batch: `src = ss.source.memory("user STRING, ts TIMESTAMP")`, a query
        of `src.df`, then `src.add([("ana", "2018-03-02 10:00:00")])` makes one micro-batch of those rows.
        `grace` ('1m'): how long its batches stay on the server once neither its session nor a query uses it
        (the server's spark.sparkscope.grace, 15 minutes, by default)."""
        source = MemorySource(self._spark, self._jar, schema, grace=grace)
        self.fed.append(source)
        return source

    def rate(self, rows_per_second: int = 1, *, ramp_up_time: str | None = None,
             num_partitions: int | None = None) -> DataFrame:
        """A stream of (timestamp, value) rows, `rows_per_second` of them each second."""
        if int(rows_per_second) <= 0:
            raise ConfigError(f"rows_per_second must be positive, not {rows_per_second}", "Pass 1 or more")
        reader = self._spark.readStream.format("rate").option("rowsPerSecond", int(rows_per_second))
        if ramp_up_time:
            reader = reader.option("rampUpTime", ramp_up_time)
        if num_partitions:
            reader = reader.option("numPartitions", int(num_partitions))
        return reader.load()

    def socket(self, host: str = "localhost", port: int = 9999, *, include_timestamp: bool = False) -> DataFrame:
        """Lines of UTF-8 text read from a TCP socket (testing only: not fault tolerant)."""
        reader = self._spark.readStream.format("socket").option("host", host).option("port", int(port))
        if include_timestamp:
            reader = reader.option("includeTimestamp", True)
        return reader.load()

    def files(self, fmt: str, path: str, *, schema: str | StructType | None = None,
              max_files_per_trigger: int | None = None, latest_first: bool | None = None,
              max_file_age: str | None = None, sep: str | None = None, header: bool | None = None,
              mode: str | None = None, corrupt_record_column: str | None = None,
              options: dict[str, Any] | None = None) -> DataFrame:
        """Files appearing in a directory, read as a stream. The schema is required (DDL or StructType)."""
        fmt = fmt.lower()
        if fmt not in FILE_FORMATS:
            raise ConfigError(f"'{fmt}' is not a file format", "Use one of: " + ", ".join(FILE_FORMATS))
        reader = self._spark.readStream.format(fmt)
        if schema is None and fmt != "text":
            inference = str(self._spark.conf.get("spark.sql.streaming.schemaInference", "false")).lower()
            if inference != "true":
                raise ConfigError(
                    f"A streaming {fmt} source needs a schema",
                    "Pass schema=\"col TYPE, …\" (or a StructType), or set spark.sql.streaming.schemaInference=true",
                )
        if schema is not None:
            try:
                reader = reader.schema(schema)
            except Exception as exc:
                raise _schema_error(schema, exc) from exc
        settings: dict[str, Any] = {
            "maxFilesPerTrigger": max_files_per_trigger, "latestFirst": latest_first, "maxFileAge": max_file_age,
            "sep": sep, "header": header, "columnNameOfCorruptRecord": corrupt_record_column,
        }
        if mode is not None:
            if mode.upper() not in PARSE_MODES:
                raise ConfigError(f"'{mode}' is not a parse mode", "Use one of: " + ", ".join(PARSE_MODES))
            settings["mode"] = mode.upper()
        settings.update(options or {})
        for key, value in settings.items():
            if value is not None:
                reader = reader.option(key, str(value).lower() if isinstance(value, bool) else value)
        df = reader.load(for_server(path, self._same_machine))
        if isinstance(schema, str):
            try:
                df.schema  # noqa: B018 - validates the DDL on the server now, not at start time
            except Exception as exc:
                raise _schema_error(schema, exc) from exc
        return df

    def table(self, name: str) -> DataFrame:
        """A table read as a stream (e.g. the output of another query's table sink)."""
        with translated():
            df = self._spark.readStream.table(name)
            df.schema  # noqa: B018 - resolve now so an unknown table fails here
            return df

    def kafka(self, bootstrap_servers: str, *, subscribe: str | None = None, subscribe_pattern: str | None = None,
              assign: str | dict[str, list[int]] | None = None, starting_offsets: str | dict[str, Any] | None = None,
              max_offsets_per_trigger: int | None = None, fail_on_data_loss: bool | None = None,
              min_partitions: int | None = None, include_headers: bool | None = None,
              options: dict[str, Any] | None = None) -> DataFrame:
        """Kafka topics, with Spark's options and schema (key, value, topic, partition, offset, timestamp,
        timestampType, and headers if asked). Spark's connector when the server has it, sparkscope's own
        source otherwise (ss.kafka_note says which)."""
        settings: dict[str, Any] = {
            "kafka.bootstrap.servers": bootstrap_servers, "subscribe": subscribe, "subscribePattern": subscribe_pattern,
            "assign": assign, "startingOffsets": starting_offsets, "maxOffsetsPerTrigger": max_offsets_per_trigger,
            "failOnDataLoss": fail_on_data_loss, "minPartitions": min_partitions, "includeHeaders": include_headers,
            **(options or {})}
        given = {key: _option_text(value) for key, value in settings.items() if value is not None}
        check_kafka_options(given)
        self._kafka.remember(given)
        with translated():
            reader = self._spark.readStream.format(self._kafka.format()).options(**given)
            df = reader.load()
            df.schema  # noqa: B018 - analysed now, so a bad option fails here and not at start
        return df


def check_kafka_options(options: dict[str, str]) -> None:
    """Spark's connector's checks, made here first so that both implementations answer alike."""
    from ..kafka.options import KafkaOptionError, SourceOptions

    try:
        SourceOptions.parse(options)
    except KafkaOptionError as exc:
        raise ConfigError(str(exc), "See the Kafka options in docs/kafka.md", code="kafka_option") from None


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        import json

        return json.dumps(value)
    return str(value)


def _schema_error(schema: Any, exc: BaseException) -> ConfigError:
    return ConfigError(
        f"The schema '{schema}' is not valid ({translate(exc).message})",
        "Write it as DDL, e.g. \"action STRING, time TIMESTAMP\"",
        type(exc).__name__,
    )
