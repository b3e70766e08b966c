"""Which Kafka a session uses: Spark's connector when the server has it (asked, not guessed), otherwise
sparkscope's own source and sink, registered with the session the first time they are needed."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigError, UnsupportedOperation
from ..error_reading import missing_data_source
from . import SOURCE_NAME

CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10"
SPARK_FORMAT = "kafka"
# Spark's connector is read with these; a server without it answers DATA_SOURCE_NOT_FOUND at analysis
_PROBE_OPTIONS = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "sparkscope-probe"}


# Spark gives Python streaming sources admission control (latestOffset(start, limit)) from 4.3 on
OLD_SPARK_NOTE = ("Spark before 4.3 gives a Python source no admission control, so each batch reads all that is "
                  "there and maxOffsetsPerTrigger is not applied (Spark's connector applies it)")


def recorded_bootstraps(records: list[Any], session_id: str | None) -> list[str]:
    """The Kafka clusters the catalog's queries read (a Kafka source's options, in the recorded plan) or write (a
    Kafka sink's options): the other sessions' first, then this session's, so that the last one is the nearest."""
    from .._pyspark import plan_fields

    def cluster(record: Any) -> str | None:
        if (record.options or {}).get("kafka.bootstrap.servers"):
            return str(record.options["kafka.bootstrap.servers"])
        fields = plan_fields(record.plan or b"")
        return next((value for (name, key), (_, value) in zip(fields, fields[1:], strict=False)
                     if name == "key" and key.lower() == "kafka.bootstrap.servers" and value), None)

    ordered = sorted(records, key=lambda r: (r.session_id == session_id, r.started_at))
    return [found for record in ordered if (found := cluster(record))]


def admission_control(spark_version: str | None) -> bool:
    """Whether a server of this Spark version asks Python streaming sources with a read limit (4.3 and later)."""
    try:
        major, minor = (int(part) for part in (spark_version or "").split(".")[:2])
    except ValueError:
        return True  # a version we cannot read: the newer behaviour
    return (major, minor) >= (4, 3)


def connector_package(spark_version: str, scala_version: str = "2.13") -> str:
    """The Maven coordinates of Spark's Kafka connector for a server's Spark and Scala versions."""
    return f"{CONNECTOR}_{scala_version}:{spark_version}"


def is_kafka(fmt: str | None) -> bool:
    return (fmt or "").strip().lower() in (SPARK_FORMAT, SOURCE_NAME)


def reads_own_source(plan: bytes | None) -> bool:
    """Whether a stored plan reads sparkscope's Kafka source (which a new session must register first)."""
    return plan is not None and SOURCE_NAME.encode() in plan


class KafkaSupport:
    """One per session: the format to read and write Kafka with, and a line saying which and why."""

    def __init__(self, spark: Any, server_version: str, profile: str | None = None):
        self._spark = spark
        self._server_version = server_version
        self._profile = profile
        self._lock = threading.Lock()
        self._has_connector: bool | None = None
        self._registered = False
        self._bootstraps: list[str] = []  # the clusters this session's Kafka sources and sinks named
        # why the server's Python cannot run sparkscope's own source (None: it can); the session sets it
        self.own_source_problem: Callable[[], str | None] = lambda: None

    def remember(self, options: Mapping[str, Any]) -> None:
        """Note the cluster a source or sink of this session names, for :topics and :produce."""
        given = {str(k).lower(): str(v) for k, v in options.items()}.get("kafka.bootstrap.servers")
        if given:
            with self._lock:
                if given in self._bootstraps:
                    self._bootstraps.remove(given)
                self._bootstraps.append(given)

    def bootstrap(self, given: str | None = None, recorded: list[str] | None = None) -> str:
        """The cluster to talk to: `given`, else the profile's kafka_bootstrap, else the one this session's
        queries used last, else one from the catalog's records (`recorded`)."""
        if given:
            return given
        if self._profile:
            from ..connection.config import load_profiles

            value = load_profiles().get(self._profile, {}).get("kafka_bootstrap")
            if value:
                return str(value)
        with self._lock:
            if self._bootstraps:
                return self._bootstraps[-1]
        if recorded:
            return recorded[-1]
        raise ConfigError("No Kafka cluster to talk to", "Give one with --bootstrap host:port, or set "
                          "kafka_bootstrap in your profile", code="no_bootstrap")

    def has_connector(self) -> bool:
        with self._lock:
            if self._has_connector is None:
                self._has_connector = self._probe()
            return self._has_connector

    def _probe(self) -> bool:
        # a batch read: the REPL wraps the stream reader's load() to come here (analysed only, never run)
        from .._pyspark import own_calls

        reader = self._spark.read.format(SPARK_FORMAT).options(**_PROBE_OPTIONS)
        try:
            with own_calls():  # from a user's cell (display(), ss.start): the REPL's load() wrapper passes it on
                reader.load().schema  # noqa: B018 - analysed on the server
        except Exception as exc:
            if missing_data_source(exc):
                return False
            raise
        return True

    def format(self) -> str:
        """"kafka" when the server has Spark's connector, else sparkscope's source (registered now)."""
        if self.has_connector():
            return SPARK_FORMAT
        problem = self.own_source_problem()
        if problem:
            raise UnsupportedOperation(
                f"This server cannot read or write Kafka: it has no spark-sql-kafka connector, and for sparkscope's "
                f"own source {problem}", "Add confluent-kafka and pyarrow to the server's Python (pip install -r "
                "server-config/requirements.txt), or start the server with Spark's connector (--packages "
                f"{connector_package(self._server_version or '<spark version>')})", code="kafka_unavailable")
        self.register()
        return SOURCE_NAME

    def register(self) -> None:
        """Register sparkscope's Kafka source and sink with this session, shipped by value: the server's
        Python needs confluent-kafka and pyarrow, not sparkscope."""
        with self._lock:
            if self._registered:
                return
            from pyspark import cloudpickle

            from .source import KafkaDataSource

            cloudpickle.register_pickle_by_value(sys.modules[__package__])
            self._spark.dataSource.register(KafkaDataSource)
            self._registered = True

    def describe(self) -> str:
        """One line: which implementation runs, and why."""
        if self.has_connector():
            return "Kafka through Spark's connector (spark-sql-kafka) on the server"
        package = connector_package(self._server_version or "<spark version>")
        if not admission_control(self._server_version):
            return (f"Kafka through sparkscope's own source and sink (no spark-sql-kafka connector on the server); "
                    f"{OLD_SPARK_NOTE}")
        return (f"Kafka through sparkscope's own source and sink (confluent-kafka in the server's Python): the "
                f"server has no spark-sql-kafka connector (a server started with spark.jars.packages={package} has it, "
                f"where Maven Central is reachable)")
