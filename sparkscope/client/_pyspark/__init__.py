"""The one place sparkscope reaches into pyspark's Connect client beyond its public API (this package: the
wrappers for pyspark code run in the REPL are in hooks.py).

Each function names the pyspark internal it uses and the version it was checked against.
tests/unit/client/test_pyspark_adapter.py fails loudly when an upgrade removes one of them, and
tests/unit/test_layering.py fails when any other module touches a private pyspark name.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .hooks import (ReaderSettings, SaveSettings, WriterSettings, builder_options, connect_builder_create,
                    connect_readers, connect_save_method, connect_start_method, intercept, own_calls, pyspark_classes)

__all__ = ["ReaderSettings", "SaveSettings", "WriterSettings", "builder_options", "connect_builder_create",
           "connect_readers", "connect_save_method", "connect_start_method", "intercept", "own_calls",
           "pyspark_classes"]

CHECKED_AGAINST = "4.3.0"
OLDEST_CLIENT = "4.0.0"  # the pyspark clients sparkscope works beside: 4.0 to 4.3 (pyproject's range)


def client_version() -> str:
    """The version of the pyspark this process runs (pyspark.__version__, without importing pyspark's sql)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyspark")
    except PackageNotFoundError:  # pragma: no cover - sparkscope depends on it
        return "unknown"


def version_tuple(text: str | None) -> tuple[int, ...]:
    """'4.1.4' as (4, 1, 4); '4.2.0.dev1' as (4, 2, 0); () when it is not a version."""
    parts = []
    for piece in (text or "").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)

# The private names used below, as (where, attribute): the adapter test checks each still exists.
INTERNALS = (
    ("pyspark.sql.connect.streaming.readwriter.DataStreamReader", "_format"),  # set in __init__
    ("pyspark.sql.connect.streaming.readwriter.DataStreamReader", "_client"),  # set in __init__
    ("pyspark.sql.connect.streaming.readwriter.DataStreamReader", "_options"),  # set in __init__
    ("pyspark.sql.connect.readwriter.DataFrameReader", "_format"),  # set in __init__
    ("pyspark.sql.connect.readwriter.DataFrameReader", "_client"),  # set in __init__
    ("pyspark.sql.connect.readwriter.DataFrameReader", "_options"),  # set in __init__
    ("pyspark.sql.connect.readwriter.DataFrameWriter", "_write"),  # set in __init__
    ("pyspark.sql.connect.readwriter.DataFrameWriter", "_spark"),  # set in __init__
    ("pyspark.sql.connect.dataframe.DataFrame", "_explain_string"),
    ("pyspark.sql.connect.dataframe.DataFrame", "_to_table"),
    ("pyspark.sql.connect.dataframe.DataFrame", "_plan"),  # set in __init__
    ("pyspark.sql.connect.client.core.SparkConnectClient", "_user_id"),  # set in __init__
    ("pyspark.sql.connect.client.core.SparkConnectClient", "_stub"),  # set in __init__
    ("pyspark.sql.connect.streaming.query.StreamingQuery", "_execute_streaming_query_cmd"),
    ("pyspark.sql.connect.session.SparkSession", "_default_session"),
    ("pyspark.sql.connect.session.SparkSession", "_active_session"),
    ("pyspark.sql.connect.session.SparkSession", "_lock"),
    ("pyspark.sql.connect.streaming.query.StreamingQueryManager", "_sqlb"),  # set in __init__
    ("pyspark.sql.connect.streaming.query.StreamingQueryListenerBus", "_listener_bus"),
    ("pyspark.sql.connect.streaming.query.StreamingQueryListenerBus", "_execution_thread"),
    ("pyspark.sql.connect.streaming.query.StreamingQueryListenerBus", "_lock"),
    ("pyspark.sql.connect.client.core.ChannelBuilder", "_secure_channel"),
    ("pyspark.sql.connect.client.core", "disable_gc"),  # module globals: imported from pyspark.util
    ("pyspark.sql.connect.client.reattach", "disable_gc"),
    ("pyspark.sql.session.SparkSession.Builder", "_options"),  # set in __init__
    ("pyspark.sql.connect.session.SparkSession.Builder", "_options"),  # set in __init__
    ("pyspark.sql.connect.streaming.readwriter.DataStreamWriter", "_start_internal"),
    ("pyspark.sql.connect.streaming.readwriter.DataStreamWriter", "_write_proto"),  # set in __init__
    ("pyspark.sql.connect.streaming.readwriter.DataStreamWriter", "_write_stream"),  # set in __init__
    ("pyspark.sql.connect.streaming.readwriter.DataStreamWriter", "_session"),  # set in __init__
    ("pyspark.sql.connect.plan.WriteStreamOperation", "_child"),  # set in LogicalPlan.__init__
)


# -- sessions (public in 4.3.0, kept here so one file names every pyspark assumption) -------------
def session_id(spark: Any) -> str:
    """SparkSession.session_id (public, 4.3.0)."""
    return str(spark.session_id)


def user_id(spark: Any) -> str | None:
    """SparkConnectClient._user_id (private, 4.3.0): the user the server sees, from SPARK_USER/USER."""
    return getattr(spark.client, "_user_id", None)


def make_active(spark: Any) -> None:
    """SparkSession._default_session and _active_session (private, 4.3.0): pyspark parses DDL strings
    (e.g. applyInPandasWithState's schemas) with the *active* session, which is the first one created
    and not stopped, not the latest. After a reconnect that would be a session of a dead server."""
    from pyspark.sql.connect.session import SparkSession

    with SparkSession._lock:
        SparkSession._default_session = spark
        _made_active[:] = [ref for ref in _made_active if ref() not in (None, spark)] + [weakref.ref(spark)]
    SparkSession._active_session.session = spark


_made_active: list[weakref.ref[Any]] = []  # the sessions make_active made the default, the latest last


def pass_on_active(stopped: Any) -> None:
    """After `stopped` stopped (its stop() leaves pyspark no default session): the session made active before it,
    if it is still open, is the default again, so that another sparkscope session of this process still parses DDL
    strings."""
    from pyspark.sql.connect.session import SparkSession

    if not SparkSession._lock.acquire(blocking=False):  # another thread makes or stops a session right now (the
        return  # REPL's spark.stop(), which waits on this close): it sets the default itself
    try:
        open_ones = [spark for spark in (ref() for ref in _made_active)
                     if spark is not None and spark is not stopped and not spark.is_stopped]
        _made_active[:] = [weakref.ref(spark) for spark in open_ones]
        if SparkSession._default_session is None and open_ones:
            make_active(open_ones[-1])  # its lock is reentrant
    finally:
        SparkSession._lock.release()


# The confs a newer client's createDataFrame asks the server for (SparkConnectClient.get_config_dict in
# pyspark/sql/connect/session.py, 4.3.0) and an older server does not have: Spark 4.0 answers SQL_CONF_NOT_FOUND, so
# pyspark 4.3's createDataFrame with rows fails there. The values are Spark 4.3's defaults.
CREATE_DATAFRAME_CONFS = {
    "spark.sql.session.localRelationSizeLimit": "3221225472",
    "spark.sql.session.localRelationChunkSizeRows": "10000",
    "spark.sql.session.localRelationChunkSizeBytes": "16777216",
    "spark.sql.session.localRelationBatchOfChunksSizeBytes": "1073741824",
}


def fill_confs_the_server_lacks(spark: Any, server_version: str) -> list[str]:
    """On a server older than this client: set, in this session, the CREATE_DATAFRAME_CONFS it does not have (one
    RPC each, only there), so that createDataFrame works as it does on a server of the client's own version.
    Returns the confs set."""
    from pyspark.errors import PySparkException

    if version_tuple(server_version)[:2] >= version_tuple(client_version())[:2]:
        return []
    filled = []
    for key, value in CREATE_DATAFRAME_CONFS.items():
        try:
            spark.conf.get(key)
        except PySparkException as exc:
            if exc.getCondition() != "SQL_CONF_NOT_FOUND":
                raise
            spark.conf.set(key, value)
            filled.append(key)
    return filled


def session_builder(url: str, tls_credentials: Callable[[str | None], Any] | None = None,
                    interceptors: Sequence[Any] = ()) -> Any:
    """SparkSession.builder for `url`, on a DefaultChannelBuilder (public, 3.5+) with `interceptors` added to its
    channel (add_interceptor, public). With `tls_credentials` (the channel's credentials for a token: trusting a
    private CA, connection/credentials.py), its TLS channel uses them instead of gRPC's default roots, for a cluster
    behind a TLS proxy with a private CA. Its toChannel mirrors DefaultChannelBuilder.toChannel and calls
    ChannelBuilder._secure_channel (private, 4.3.0) so pyspark's channel options and the interceptors still apply."""
    from pyspark.sql.connect.client.core import DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession

    if tls_credentials is None:
        builder = DefaultChannelBuilder(url)
    else:
        credentials = tls_credentials

        class TrustingChannelBuilder(DefaultChannelBuilder):
            def toChannel(self) -> Any:  # noqa: N802 - pyspark's name
                if not self.use_ssl:
                    return super().toChannel()  # the CA only matters for TLS
                return self._secure_channel(self.endpoint, credentials(self.token))

        builder = TrustingChannelBuilder(url)
    for interceptor in interceptors:
        builder.add_interceptor(interceptor)
    return SparkSession.builder.channelBuilder(builder)


def default_retry_policy(**settings: Any) -> Any:
    """pyspark's DefaultPolicy with `settings`, those this pyspark knows (public; max_server_retry_delay is 4.1's:
    a 4.0 client has no such setting and leaves the server's retry delay uncapped)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    known = _policy_settings()
    return DefaultPolicy(**{key: value for key, value in settings.items() if key in known})


@functools.cache
def _policy_settings() -> frozenset[str]:
    import inspect

    from pyspark.sql.connect.client.retries import DefaultPolicy

    return frozenset(inspect.signature(DefaultPolicy.__init__).parameters)


CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
_held = 0
_saved: dict[str, Any] = {}
_held_lock = threading.Lock()


def hold_process_settings() -> None:
    """What a Connect session of ours needs of the process, until release_process_settings() is called as
    often: SPARK_CONNECT_MODE_ENABLED set (pyspark.sql.functions dispatches to the Connect functions only
    then) and pyspark's garbage-collection switch off (keep_garbage_collection). After the last release both
    are as they were, so a program that uses sparkscope.connect() keeps its own process."""
    global _held
    with _held_lock:
        if _held == 0:
            _saved.update(env=os.environ.get(CONNECT_MODE),
                          gc=[(module, module.disable_gc) for module in _gc_switching_modules()])
            os.environ[CONNECT_MODE] = "1"
            keep_garbage_collection()
        _held += 1


def release_process_settings() -> None:
    global _held
    with _held_lock:
        if _held == 0:
            return
        _held -= 1
        if _held == 0:
            if _saved["env"] is None:
                os.environ.pop(CONNECT_MODE, None)
            else:
                os.environ[CONNECT_MODE] = _saved["env"]
            for module, switch in _saved["gc"]:
                module.disable_gc = switch


def keep_garbage_collection() -> None:
    """pyspark.util.disable_gc, as imported by pyspark.sql.connect.client.core and .reattach (4.3.0),
    becomes a no-op. pyspark switches the process's garbage collector off around every RPC that
    streams responses, *including while it waits for the next one*, and back on only if it was on when
    that call began. With more than one thread making calls (the monitor's event stream, the prompt,
    :watch) a call that began while another had it off never switches it back on, and an event stream
    that waits for hours keeps it off for hours. Every reference cycle then lives forever: a REPL with
    :watch open grew by 60 MB a minute. Collection is left to Python, as everywhere else. pyspark 4.0 to 4.2 have no
    such switch: nothing to do there."""
    for module in _gc_switching_modules():
        module.disable_gc = contextlib.nullcontext


@functools.cache
def _gc_switching_modules() -> tuple[Any, ...]:
    """The modules of this pyspark that switch the garbage collector off around a call (4.3.0: core, reattach;
    4.0.5, 4.1.4, 4.2.1: none). Looked up once."""
    from pyspark.sql.connect.client import core, reattach

    return tuple(module for module in (core, reattach) if hasattr(module, "disable_gc"))


def keep_session_on_close(spark: Any) -> None:
    """SparkSession.release_session_on_close (public attribute, 4.3.0): stop() then leaves the
    server-side session, and its queries, running."""
    spark.release_session_on_close = False


def foreach_jvm_writer(writer: Any, packet: bytes) -> Any:
    """DataStreamWriter.foreach with a JVM ForeachWriter: Spark Connect's WriteStreamOperationStart carries one as
    foreach_writer.scala_function.payload (the Java-serialized ForeachWriterPacket the Scala client sends), next to
    the Python writer pyspark's foreach() fills in (its _write_proto, as foreach() sets it, 4.3.0)."""
    writer._write_proto.foreach_writer.scala_function.payload = packet
    return writer


def pickle_by_value(module_name: str) -> None:
    """pyspark.cloudpickle.register_pickle_by_value (public, 4.3.0): functions of `module_name` travel
    with their code, so a server without sparkscope installed can run them (foreachBatch)."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[module_name])


def explain_string(df: Any, extended: bool = False) -> str:
    """DataFrame._explain_string (private, 4.3.0): the plan text that explain() prints."""
    return str(df._explain_string(extended=extended))


def arrow_table(df: Any) -> Any:
    """DataFrame._to_table (private, 4.3.0): a DataFrame's rows as the server's Arrow stream brings them, in one round
    trip: toArrow() asks the server for the schema first, and collect() reads a conf (one round trip more each)."""
    table, _ = df._to_table()
    return table


def first_column(df: Any) -> list[Any]:
    """The values of a DataFrame's first column (arrow_table): sparkscope's jar calls, one round trip each."""
    table = arrow_table(df)
    return list(table.column(0).to_pylist()) if table.num_columns else []


def query_explain_string(handle: Any, extended: bool = False) -> str:
    """StreamingQuery._execute_streaming_query_cmd (private, 4.3.0): the text explain() would print,
    returned instead (no stdout redirection from a worker thread)."""
    from pyspark.sql.connect.proto import StreamingQueryCommand

    command = StreamingQueryCommand()
    command.explain.extended = extended
    return str(handle._execute_streaming_query_cmd(command).explain.result)


def rpc_stub(spark: Any) -> Any:
    """SparkConnectClient._stub (private, 4.3.0): the gRPC stub, for counting RPCs in benchmarks."""
    return spark.client._stub


# -- the raw gRPC service, for the start-up probe ------------------------------------------------
def connect_service(channel: Any) -> tuple[Any, Any]:
    """The generated protobuf module and a SparkConnectService stub on `channel` (4.3.0)."""
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    return base_pb2, base_pb2_grpc.SparkConnectServiceStub(channel)


# -- the streaming listener bus ------------------------------------------------------------------
class ListenerBus:
    """pyspark's client-side StreamingQueryListenerBus (spark.streams._sqlb, private, 4.3.0).

    When the server-side event stream breaks, pyspark keeps the dead thread and never registers
    again; sparkscope resets the bus so that adding a listener opens a new stream.
    """

    def __init__(self, spark: Any):
        self._bus = spark.streams._sqlb

    def healthy(self, listener: Any) -> bool:
        """`listener` is on the bus and the bus's event thread lives."""
        thread = self._bus._execution_thread
        return listener in self._bus._listener_bus and thread is not None and thread.is_alive()

    def detach_all(self, listener: Any, timeout: float) -> list[Any] | None:
        """Forget the dead stream: drop every listener (returned, except `listener`) and the thread.
        None when the bus's lock is not free within `timeout` (a stuck addListener holds it)."""
        lock: threading.Lock = self._bus._lock
        if not lock.acquire(timeout=timeout):
            return None
        try:
            listeners = self._bus._listener_bus
            if listener in listeners:
                listeners.remove(listener)
            others = list(listeners)
            listeners.clear()
            self._bus._execution_thread = None
        finally:
            lock.release()
        return others

    def end_server_stream(self, spark: Any) -> None:
        """Tell the server to drop this session's listener stream, as pyspark's remove() does for the
        last listener (StreamingQueryListenerBusCommand.remove_listener_bus_listener, public proto, via
        SparkConnectClient.execute_command, 4.3.0). After dropped connections the server still holds
        the old stream, and refuses a new one with INVALID_CURSOR.DISCONNECTED until it is gone."""
        from pyspark.sql.connect import proto as pb2

        command = pb2.Command()
        command.streaming_query_listener_bus_command.remove_listener_bus_listener = True
        spark.client.execute_command(command)

    def reattach(self, others: list[Any]) -> None:
        """Put back listeners that detach_all removed, once a new stream runs."""
        with self._bus._lock:
            self._bus._listener_bus.extend(others)



# -- plans: a streaming DataFrame kept as bytes, and rebuilt in another session ------------------
def plan_bytes(df: Any) -> bytes:
    """DataFrame._plan (private, 4.3.0): the DataFrame's Relation protobuf, serialised. Uncompressed:
    LogicalPlan.plan() builds the Relation itself; only to_proto() may compress it."""
    return bytes(df._plan.plan(df.sparkSession.client).SerializeToString())


def dataframe_from_plan(spark: Any, data: bytes) -> Any:
    """A DataFrame of `spark` whose plan is the stored Relation (pyspark.sql.connect.plan.LogicalPlan,
    public class, 4.3.0; the DataFrame constructor takes a plan and a session)."""
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import LogicalPlan
    from pyspark.sql.connect.proto import Relation

    relation = Relation()
    relation.ParseFromString(data)

    class StoredPlan(LogicalPlan):
        def __init__(self) -> None:
            super().__init__(None)

        def plan(self, session: Any) -> Any:
            copy = Relation()
            copy.CopyFrom(relation)
            return copy

    return DataFrame(StoredPlan(), spark)


def plan_fields(data: bytes) -> list[tuple[str, str]]:
    """Every (field name, string value or '') set anywhere in a stored Relation, for the catalog's
    check of what would not replay (local data, temp views)."""
    from google.protobuf.message import Message
    from pyspark.sql.connect.proto import Relation

    relation = Relation()
    relation.ParseFromString(data)
    found: list[tuple[str, str]] = []
    stack: list[Message] = [relation]
    while stack:
        message = stack.pop()
        for field, value in message.ListFields():
            if field.message_type is None:
                if isinstance(value, str):
                    found.append((field.name, value))
                elif not isinstance(value, (bytes, int, float, bool)):  # a repeated string field (a read's paths)
                    found += [(field.name, item if isinstance(item, str) else "") for item in value]
                else:
                    found.append((field.name, ""))
                continue
            found.append((field.name, ""))
            if field.message_type.GetOptions().map_entry:  # a map (a read's options): its entries, as key and value
                for key, item in value.items():
                    found += [("key", str(key)), ("value", item if isinstance(item, str) else "")]
                    if isinstance(item, Message):
                        stack.append(item)
                continue
            repeated = getattr(field, "is_repeated", None)  # protobuf 6; `label` before it
            if repeated is None:
                repeated = field.label == field.LABEL_REPEATED
            items = value if repeated else [value]
            stack.extend(item for item in items if isinstance(item, Message))
    return found
