"""Code written for pyspark runs as written in the REPL, `-c`, `-f` and `-i`.

What pyspark code does that a Connect client in a REPL must answer differently, decided here and
nowhere else (client/_pyspark/ only wraps the methods):

- `SparkSession.builder…getOrCreate()` returns the REPL's session. Runtime SQL confs given to the
  builder are set on it; appName, master and static confs are not, and one line says so, once.
- Waiting calls never stop a stream. Spark Connect stops a query when the operation waiting on it is
  interrupted, so Ctrl-C must not interrupt: awaitTermination and awaitAnyTermination wait in slices of
  a second, and Ctrl-C ends the wait between two; processAllAvailable, which cannot be sliced, is left
  to finish on its own. Queries start without the cell's operation tag, so a Ctrl-C of a later call in
  the same cell cannot stop them either.
- `format("console")` prints each batch here (Spark prints it on the server, out of sight): the query
  writes to a memory sink that the REPL tails, `numRows` and `truncate` honoured.
- A query that names no checkpointLocation gets a new one, as in pyspark, instead of resuming
  `<root>/<name>` from the server's spark.sql.streaming.checkpointLocation.
- `format("kafka")`, reading or writing, uses Spark's connector when the server has it and sparkscope's
  own Kafka source and sink when it does not; one line says which, and why.
- `spark.stop()` on the REPL's session closes it after the input ends, asking first as :quit does, and
  a new session takes its place.

Only the calls that the user's code makes in the executor's worker are affected (a thread-local marks
them): sparkscope.connect() users, and sparkscope's own calls, keep pyspark's behaviour.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...client import _pyspark
from ...client.errors import translate
from ...client.logs import swallowed
from ...client.kafka.connector import is_kafka
from ...client.queries.query import wait_in_slices
from ...client.connection.remote import parse_url
from ...client.queries.sources import check_kafka_options
from ..output.live import WHOLE

if TYPE_CHECKING:  # pragma: no cover
    from ..context import CommandContext, ReplContext

CONSOLE_ROWS = 20  # Spark's console sink: numRows
CONSOLE_TRUNCATE = 20  # and truncate=true: cells cut to 20 characters
# set when a server starts, so a session can only ignore them
NOT_APPLIED = {"spark.master": "master", "spark.app.name": "appName", "spark.api.mode": "spark.api.mode"}

_local = threading.local()
_installed = False
_install_lock = threading.Lock()
_numbers: dict[str, Iterator[int]] = {}  # per name prefix


class UserCall:
    """The user's input running in this thread: its executor, and whether Ctrl-C cancelled it."""

    def __init__(self, executor: CommandContext, cancelled: threading.Event):
        self.executor = executor
        self.cancelled = cancelled
        self.waiting_on: str | None = None  # the query a waiting call waits on: Ctrl-C must not interrupt


class StoppedWaiting(Exception):
    """Ctrl-C ended a wait on a query; the query runs on."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def current() -> UserCall | None:
    return getattr(_local, "call", None)


@contextlib.contextmanager
def running_user_code(call: UserCall) -> Iterator[UserCall]:
    _local.call = call
    try:
        yield call
    finally:
        _local.call = None


def install() -> None:
    """Wrap the pyspark methods, once per process (once a session is open: pyspark is imported then)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        classes = _pyspark.pyspark_classes()
        _pyspark.intercept(classes["ClassicBuilder"], "getOrCreate", _get_or_create)
        _pyspark.intercept(classes["ConnectBuilder"], "getOrCreate", _get_or_create)
        _pyspark.intercept(classes["StreamingQuery"], "awaitTermination", _await_termination)
        _pyspark.intercept(classes["StreamingQuery"], "processAllAvailable", _process_all_available)
        _pyspark.intercept(classes["StreamingQuery"], "stop", _stop_query)
        _pyspark.intercept(classes["StreamingQueryManager"], "awaitAnyTermination", _await_any_termination)
        _pyspark.intercept(classes["ConnectSession"], "stop", _stop)
        _pyspark.intercept(*_pyspark.connect_start_method(), _start)
        for reader in _pyspark.connect_readers():
            _pyspark.intercept(reader, "load", _load)
        _pyspark.intercept(*_pyspark.connect_save_method(), _save)
        _installed = True


# -- a listener that raises ---------------------------------------------------------------------------
LISTENER_FAILED = r"Listener .* threw an exception"  # pyspark's warning, from its listener thread


_listener_errors_to: list[Callable[[str], None]] = []  # the REPL that shows them (the latest one started)


def show_listener_errors(say: Callable[[str], None]) -> None:
    """A StreamingQueryListener callback of the user's that raises: pyspark warns (once per distinct message, as
    Python's default filter shows a warning), and so does the REPL, in one line above the prompt."""
    import warnings

    first = not _listener_errors_to
    _listener_errors_to[:] = [say]
    if not first:
        return
    warnings.filterwarnings("default", message=LISTENER_FAILED, category=UserWarning)  # before the pyspark ignore
    shown = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        head, _, error = str(message).partition("\n")
        if re.match(LISTENER_FAILED, head) and _listener_errors_to:
            _listener_errors_to[0](f"warning: {head}: {' '.join(error.split()) or 'no message'}")
            return
        shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


# -- getOrCreate ----------------------------------------------------------------------------------
CONF_SET_AT_START = ("CANNOT_MODIFY_CONFIG", "CANNOT_MODIFY_STATIC_CONFIG")  # Spark's conditions for those
def _get_or_create(original: Any, builder: Any) -> Any:
    call = current()
    if call is None:
        return original(builder)
    options = _pyspark.builder_options(builder)
    session = call.executor.session
    remote = options.pop("spark.remote", None)
    if remote and not _same_server(remote, session.target):
        return _pyspark.connect_builder_create({**options, "spark.remote": remote})  # the user's own choice
    ignored = []
    for key, value in options.items():
        if key in NOT_APPLIED or key.startswith("spark.local."):
            ignored.append(NOT_APPLIED.get(key, key))
            continue
        try:
            session.spark.conf.set(key, value)
        except Exception as exc:
            error = translate(exc)
            if not (error.error_class or "").startswith(CONF_SET_AT_START):
                raise error from None  # a wrong value (INVALID_CONF_VALUE), as classic getOrCreate() raises it
            ignored.append(key)
    if ignored:
        call.executor.notice_once(
            "getOrCreate", f"note: getOrCreate() gives sparkscope's session; {', '.join(ignored)} "
            f"{'is' if len(ignored) == 1 else 'are'} set when a server starts, so not applied here "
            "(sparkscope server start --conf KEY=VALUE sets a server's)")
    return session.spark


def _same_server(remote: str, target: Any) -> bool:
    if not remote.startswith("sc://"):
        return True  # local, local[*]: "a local Spark", which the REPL's session is
    try:
        other = parse_url(remote)
    except Exception:
        return False
    local = ("localhost", "127.0.0.1", "::1")
    same_host = other.host == target.host or (other.host in local and target.host in local)
    return same_host and other.port == target.port


# -- waits --------------------------------------------------------------------------------------------
def _sliced(call: UserCall, what: str, wait: Any, timeout: float | None) -> bool | None:
    """Wait a slice at a time; Ctrl-C (the call cancelled) stops waiting between two slices."""
    call.waiting_on = what
    try:
        ended = wait_in_slices(wait, timeout, call.cancelled)
    finally:
        call.waiting_on = None
    if ended is None:
        raise StoppedWaiting(what)
    return None if timeout is None else ended


def _valid_timeout(timeout: Any) -> bool:
    return timeout is None or (isinstance(timeout, (int, float)) and timeout > 0)


def _await_termination(original: Any, query: Any, timeout: Any = None) -> Any:
    call = current()
    if call is None or not _valid_timeout(timeout):  # pyspark's own check and message
        return original(query) if timeout is None else original(query, timeout)
    return _sliced(call, query.name or query.id, lambda seconds: original(query, seconds), timeout)


def _await_any_termination(original: Any, manager: Any, timeout: Any = None) -> Any:
    call = current()
    if call is None or not _valid_timeout(timeout):
        return original(manager) if timeout is None else original(manager, timeout)
    return _sliced(call, "any query", lambda seconds: original(manager, seconds), timeout)


def _process_all_available(original: Any, query: Any) -> Any:
    call = current()
    if call is None:
        return original(query)
    call.waiting_on = query.name or query.id  # one server call: Ctrl-C leaves it to end by itself
    try:
        return original(query)
    finally:
        call.waiting_on = None


_console_runs: set[str] = set()  # the run ids of console-sink queries printed here (by _start)


def _stop_query(original: Any, query: Any) -> Any:
    """query.stop() of a console-sink query printed here: its batches written before the end print before
    stop() returns, as Spark's console sink printed each batch inside it; nothing prints after the code
    that follows (a script's "Query stopped" line)."""
    result = original(query)
    call = current()
    if call is not None and query.runId in _console_runs:
        _console_runs.discard(query.runId)
        with swallowed(f"printing the last batches of {query.name}"):
            call.executor.live().finish_tails([query.name])
    return result


# -- Kafka ------------------------------------------------------------------------------------------
def _kafka_format(call: UserCall) -> str:
    """The format that reads and writes Kafka in this session, the first use saying which and why."""
    kafka = call.executor.session.kafka
    _local.choosing_kafka = True  # its probe reads format("kafka"), which must reach pyspark unchanged
    try:
        fmt = kafka.format()
    finally:
        _local.choosing_kafka = False
    call.executor.notice_once(f"kafka {call.executor.session.session_id}", f"note: {kafka.describe()}")
    return fmt


def _save(original: Any, writer: Any, path: Any = None, format: Any = None,  # noqa: A002 - pyspark's names
          mode: Any = None, partitionBy: Any = None, **options: Any) -> Any:  # noqa: N803
    """df.write.format("kafka")…save(): through sparkscope's own sink where the server has no connector. Spark's
    connector writes in its default mode (errorifexists) as in append, and refuses overwrite; a Python data source
    writes in append, so the default mode becomes that."""
    call = current()
    settings = _pyspark.SaveSettings(writer)
    if (call is not None and is_kafka(format or settings.format) and call.executor.owns_spark(settings.session)):
        format = None  # noqa: A001
        settings.format = _kafka_format(call)
        call.executor.session.kafka.remember({**settings.options, **{str(k): str(v) for k, v in options.items()}})
        if settings.format != "kafka" and (mode or settings.mode) in (None, "error", "errorifexists", "default"):
            mode = "append"
    return original(writer, path=path, format=format, mode=mode, partitionBy=partitionBy, **options)


def _load(original: Any, reader: Any, path: Any = None, format: Any = None, schema: Any = None,  # noqa: A002
          **options: Any) -> Any:
    call = current()
    settings = _pyspark.ReaderSettings(reader)
    if (call is not None and not getattr(_local, "choosing_kafka", False) and is_kafka(format or settings.format)
            and call.executor.owns_spark(settings.session)):
        format = None  # noqa: A001
        settings.format = _kafka_format(call)
        given = {**{str(k): str(v) for k, v in settings.options.items()}, **{str(k): str(v) for k, v in options.items()}}
        check_kafka_options(given)
        call.executor.session.kafka.remember(given)
    return original(reader, path=path, format=format, schema=schema, **options)


# -- starting ---------------------------------------------------------------------------------------
def _start(original: Any, writer: Any, path: Any = None, tableName: Any = None, format: Any = None,  # noqa: A002, N803
           outputMode: Any = None, partitionBy: Any = None, queryName: Any = None, **options: Any) -> Any:  # noqa: N803
    call = current()
    if call is None:
        return original(writer, path=path, tableName=tableName, format=format, outputMode=outputMode,
                        partitionBy=partitionBy, queryName=queryName, **options)
    settings = _pyspark.WriterSettings(writer)
    # what start()'s own arguments set, first, so that the decisions below see them
    if format is not None:
        settings.format = format
    if queryName is not None:
        settings.query_name = queryName
    if outputMode is not None:
        writer.outputMode(outputMode)
    writer.options(**options)
    session = call.executor.session
    ours = settings.session is session.spark
    console = ours and settings.format == "console"
    rows: int = CONSOLE_ROWS
    truncate: int | None = CONSOLE_TRUNCATE
    if console:  # printed here instead, from a memory sink
        rows = _int_option(_take(settings.options, "numRows"), CONSOLE_ROWS)
        truncate = _truncate_option(_take(settings.options, "truncate"))
        settings.format = "memory"
        if not settings.query_name:
            settings.query_name = free_query_name(session, "console")
    kafka = ours and is_kafka(settings.format)
    if kafka:
        settings.format = _kafka_format(call)
        session.kafka.remember(dict(settings.options))
    checkpoint = settings.options.get("checkpointLocation")
    if ours and not checkpoint:  # a fresh one, as pyspark would have
        checkpoint = session.fresh_checkpoint(settings.query_name or "query")
        if checkpoint:
            settings.options["checkpointLocation"] = checkpoint
    users = []
    if ours:
        with swallowed("looking for queries on the same checkpoint"):
            users = session.on_checkpoint(checkpoint)
    spark = settings.session
    tags = list(spark.getTags())
    spark.clearTags()  # a query started under the cell's tag would stop when that tag is interrupted
    try:
        handle = original(writer, path=path, tableName=tableName, partitionBy=partitionBy)
    finally:
        for tag in tags:
            spark.addTag(tag)
    if ours:
        sink = settings.foreach_sink or ("table" if tableName else "kafka" if kafka else (settings.format or "parquet"))
        with swallowed(f"recording {handle.name or handle.id} in the catalog"):
            query = session.record_started(handle, settings.dataframe(), sink=sink, mode=settings.output_mode,
                                           trigger=settings.trigger, checkpoint=checkpoint,
                                           options={k: v for k, v in settings.options.items()
                                                    if k != "checkpointLocation"},
                                           path=path, table=tableName, checkpoint_users=users)
            if console:
                call.executor.live().tail(query, limit=rows, truncate=truncate, from_start=True, empty=True)
                _console_runs.add(handle.runId)
    return handle


def _take(options: Any, key: str) -> Any:
    value = options.get(key)
    if key in options:
        del options[key]
    return value


def free_query_name(session: Any, prefix: str) -> str:
    """`prefix_N`, the first N no query of this session has (console_1, display_query_1 …)."""
    taken = {q.name for q in session.known_queries()}
    numbers = _numbers.setdefault(prefix, itertools.count(1))
    while True:
        name = f"{prefix}_{next(numbers)}"
        if name not in taken:
            return name


def _int_option(value: Any, default: int) -> int:
    try:
        return max(1, int(str(value))) if value is not None else default
    except ValueError:
        return default


def _truncate_option(value: Any) -> int | None:
    """Spark's console sink: truncate=false shows whole cells; true (the default) cuts at 20."""
    if value is None or str(value).strip().lower() == "true":
        return CONSOLE_TRUNCATE
    if str(value).strip().lower() == "false":
        return WHOLE
    return _int_option(value, CONSOLE_TRUNCATE)


# -- stopping the session ---------------------------------------------------------------------------
def _stop(original: Any, spark: Any) -> Any:
    call = current()
    if call is None or not call.executor.owns_spark(spark):
        return original(spark)
    call.executor.request_session_stop()  # closed when this input ends: the REPL asks, then opens a new one
    return None


def replace_stopped_session(executor: ReplContext) -> None:
    """spark.stop() ran on the REPL's session: close it as pyspark would (asking first, as :quit does,
    when queries run; a script's own queries stop with it), then open a new session on the same
    server, so that spark, ss and every command work again. The REPL says so in one line; a script says nothing,
    as pyspark says nothing."""
    from ...client.deadline import within
    from ...client.errors import SparkscopeError
    from ...server.connecting import open_session
    from ..leaving import LEAVE_DEADLINE
    from ..output.render import error_line

    old = executor.session
    try:
        queries = within(LEAVE_DEADLINE, old.running, "listing running queries")
    except SparkscopeError:
        queries = []
    if not executor.interactive:  # a script stops what it started, never what it found
        queries = [q for q in queries if old.started_here(q)]
    names = ", ".join(q.name for q in queries)
    stop = not queries or not executor.interactive or executor.confirm(
        f"spark.stop() closes this session. {len(queries)} quer{'y is' if len(queries) == 1 else 'ies are'} "
        f"still running ({names}). Stop {'it' if len(queries) == 1 else 'them'}? [y/N] ")
    if stop:
        for query in queries:
            with swallowed(f"stopping {query.name}"):
                query.stop()
    try:
        new, _, left = executor.switch_session(lambda: open_session(old.target.with_session(None), server_home=old.server_home))
    except SparkscopeError as exc:
        executor.err.write(error_line(exc) + "\n")
        return
    if not executor.interactive:  # as pyspark's spark.stop(): silent; the script's own queries ended with it
        return
    ended = f"; stopped {names}" if stop and queries else ""
    kept = f"; left running in the old session: {', '.join(left)} (:stop NAME ends one)" if left else ""
    executor.err.write(f"spark.stop() closed session {old.session_id[:8]}{ended}{kept}. "
                       f"A new session {new.session_id[:8]} is ready: spark, ss and the commands use it.\n")
    executor.err.flush()
