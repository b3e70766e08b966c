"""Reading pyspark's and gRPC's failures into sparkscope's errors (errors.py): Spark's error classes and SQLSTATEs,
gRPC's status codes and details, a Python worker's traceback, the jar's own codes, and a server that ran out of
memory. `translate` turns any exception into one SparkscopeError, `translated()` does so around a block, `call` around
one call."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .error_causes import cause_at
from .errors import (AuthenticationFailed, Cancelled, ConfigError, ConnectionFailed, DeadlineExceeded, NotOwner,
                     ServerOutOfMemory, ServerUnreachable, SparkscopeError, pyspark_kind, session_changed)

T = TypeVar("T")


# The patterns below are compiled on first use (re caches them): every start imports this module.
_ERROR_CLASS = r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)*)\]"


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line
    return text.strip()


_CODES = r"^(\s*(\((?:[a-z_$][\w$]*\.)*[A-Za-z_$][\w$]*\)|\[[A-Z0-9_.]+\]))+\s*"  # (org.x.Y) [CLASS] … at the start
_SQLSTATE = r"\s*SQLSTATE: \w+.*$"


def _without_codes(line: str) -> str:
    """One line of an error without what names it for machines: the exception class or error condition in front
    ('(org.apache.spark.X) ', '[STREAM_FAILED] '), and Spark's SQLSTATE after."""
    return re.sub(_SQLSTATE, "", re.sub(_CODES, "", line.strip()))


def _strip_sqlstate(text: str) -> str:
    """An error's first line as a sentence: no codes, no SQL positions, no error condition anywhere in it."""
    text = _without_codes(text)
    text = re.sub(r"[;.]*\s*line \d+ pos \d+;?$", "", text.strip())
    text = re.sub(r"\.?\s*\(line \d+, pos \d+\)", "", text)
    text = text.replace(".;", ".")
    text = re.sub(_ERROR_CLASS, "", text, count=1).strip()
    return text.rstrip(";. ")


def summarise_error(text: str) -> str:
    """The first meaningful line of a query exception, without JVM class prefixes. For a failure inside
    Python (a foreachBatch function, or a Python data source such as sparkscope's Kafka source), the Python
    exception its traceback ends with."""
    foreign = foreign_checkpoint(text)
    if foreign is not None:
        return f"{foreign}; {FOREIGN_CHECKPOINT_HINT[0].lower()}{FOREIGN_CHECKPOINT_HINT[1:]}"
    raised = python_raised(text)
    if raised is not None:
        text = raised
    if "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY" in text:  # Spark's own advice is on a line of its own
        found = re.search(r"checkpoint location (\S+?)/(offsets|state|commits) should be empty", text)
        where = f" {found.group(1)}" if found else ""
        return (f"The checkpoint{where} holds no whole batch, yet files Spark does not expect (a first batch cut off "
                f"as the server stopped); start the query over with a new checkpoint "
                f"(ss.restart(name, fresh=True))")
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("===", "JVM stacktrace", "at ")):
            continue
        for prefix in ("org.apache.spark.", "java.lang.", "pyspark.errors."):
            if line.startswith(prefix) and ": " in line:
                line = line.split(": ", 1)[1]
        line = re.sub(r"^Query \[id = [^\]]*\] terminated with exception:\s*", "", _without_codes(line))
        return _without_codes(line)[:300]
    return text.strip()[:300]


# Spark's conditions for what a query or stream cannot do, as opposed to a wrong name or type
UNSUPPORTED_CONDITIONS = ("STREAMING_", "UNSUPPORTED_", "INVALID_", "NON_TIME_WINDOW_NOT_SUPPORTED",
                          "CALL_ON_STREAMING_DATASET_UNSUPPORTED", "WRITE_STREAM_NOT_ALLOWED")
_NAME_TAKEN = r"Cannot start query with name (\S+) as a query with that name is already active"
_CLASS_HINTS = {  # Spark's error class -> (code, the SDK's hint)
    "TABLE_OR_VIEW_NOT_FOUND": ("table_not_found", "Check the name with spark.sql('SHOW TABLES'), or start the "
                                "query that creates it"),
    "UNRESOLVED_COLUMN": ("unresolved_column", "Check the column names with df.printSchema()"),
    "PARSE_SYNTAX_ERROR": ("parse_syntax", "Check the SQL or DDL syntax"),
    "INVALID_SESSION_ID": ("session_closed", "Connect again without session_id to start a new session"),
}


# A query that reads a checkpoint another query wrote: Spark fails to parse the metadata it finds (json4s), inside
# the checkpoint's metadata logs. The guide's toTable example does it: two queries, one checkpointLocation.
_FOREIGN_CHECKPOINT = re.compile(r"json4s\.MappingException[\s\S]*?(HDFSMetadataLog|CompactibleFileStreamLog|OffsetSeqLog|"
                                 r"CommitLog)")
FOREIGN_CHECKPOINT_HINT = "Give each query a checkpointLocation of its own"


def foreign_checkpoint(text: str) -> str | None:
    """For a query failure that comes from reading another query's checkpoint: what to say instead, else None."""
    if not _FOREIGN_CHECKPOINT.search(text):
        return None
    return "its checkpoint holds metadata it cannot read, written by another query with the same checkpointLocation"


_OOM = r"OutOfMemoryError(?::\s*([^\n\"]+))?"
_GRPC_DETAILS = r"(?s)details = \"([^\"]*)\""  # a raw RpcError's text, when it has no details() to ask
OOM_HINT = ("ss.kept() lists what sparkscope keeps in the server's memory, and a query of sink='memory' keeps every "
            "row; a call that collects a large result needs it all at once. Stop what holds most, or give the server "
            "more memory: sparkscope.LocalServer().start(driver_memory='8g') after stopping it")


def _is_grpc(exc: BaseException) -> bool:
    """A failure gRPC raised itself (a raw RpcError that pyspark passed on)."""
    import grpc

    return isinstance(exc, grpc.RpcError)


def _is_pyspark(exc: BaseException, *kinds: str) -> bool:
    """A failure pyspark raised; with `kinds`, one of those classes of pyspark.errors (by isinstance)."""
    import pyspark.errors

    classes = tuple(getattr(pyspark.errors, kind) for kind in kinds) or (pyspark.errors.PySparkException,)
    return isinstance(exc, classes)


def _status_code(exc: BaseException) -> str | None:
    """The gRPC status code's name of a failure: pyspark's getGrpcStatusCode(), or a raw grpc.RpcError's code(),
    of the exception or of what caused it (pyspark's RETRIES_EXCEEDED carries the last RpcError as its cause)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        getter = getattr(current, "getGrpcStatusCode", None)
        if not callable(getter) and _is_grpc(current):
            getter = getattr(current, "code", None)
        if callable(getter):
            try:
                name = getattr(getter(), "name", None)
            except Exception:  # a call object that never got a status
                name = None
            if name and name not in ("OK", "UNKNOWN", "INTERNAL"):  # pyspark's default for a server's own error
                return str(name)
            if name == "UNKNOWN" and _is_grpc(current):
                return "UNKNOWN"  # a raw call the server failed without a Spark error
        current = current.__cause__  # an exception raised while handling another (__context__) is not caused by it
    return None


def _grpc_details(exc: BaseException, text: str) -> str:
    details = getattr(exc, "details", None)
    if callable(details):
        with contextlib.suppress(Exception):
            return str(details() or "").strip()
    match = re.search(_GRPC_DETAILS, text)
    return match.group(1).strip() if match else ""


def _grpc_error(exc: BaseException, status: str | None, text: str) -> SparkscopeError | None:
    """One line for a failed call that carries only a gRPC status (pyspark passes on a raw RpcError)."""
    details = _grpc_details(exc, text)
    if status == "RESOURCE_EXHAUSTED":
        return SparkscopeError(f"The server refused the call as too large or out of resources ({details})",
                               "Ask for fewer rows (a smaller limit), or raise the server's "
                               "spark.connect.grpc.maxInboundMessageSize", status, code="resource_exhausted")
    if status == "DEADLINE_EXCEEDED":
        return DeadlineExceeded("The server did not answer within the call's deadline",
                                "The server or the network may be overloaded; try again, or check "
                                "the server's log", status)
    if status == "CANCELLED":
        return Cancelled("Cancelled", "", status)
    if status == "UNKNOWN":
        return SparkscopeError(f"The server failed the call without saying why ({details or 'no details'})",
                               "Its log says more (LocalServer().log_lines(), for the embedded server); a server "
                               "that ran out of memory ends calls this way", status, code="server_unknown")
    return None


# gRPC's words for an address: ipv4:127.0.0.1:P, ipv6:%5B::1%5D:P (URL-encoded brackets), ipv6:[::1]:P, dns:host:P
_ADDRESS_PORT = re.compile(r"(?:ipv4:[\d.]+|ipv6:\[[^\]]*\]|ipv6:%5B[^%]*%5D|dns:[\w.-]+|localhost|127\.0\.0\.1|"
                           r"\[::1\]):(\d{2,5})\b")


def _ports_named(exc: BaseException) -> set[int]:
    """The ports of the addresses a failed call names (gRPC names the one it could not reach), through its causes."""
    found: set[int] = set()
    current: BaseException | None = exc
    for _ in range(10):
        if current is None:
            break
        text = str(current) + " " + _grpc_details(current, "")
        found |= {int(port) for port in _ADDRESS_PORT.findall(text)}
        current = current.__cause__
    return found


def unreachable_cause(exc: BaseException) -> SparkscopeError | None:
    """Why the server a call failed to reach stopped answering, when its finder knows (an out-of-memory exit)."""
    for port in _ports_named(exc):
        cause = cause_at(port)
        if cause is not None:
            return cause
    return None


def _hint_for(error_class: str) -> tuple[str | None, str]:
    return _CLASS_HINTS.get(error_class.split(".")[0], (None, ""))


def _error_class(exc: BaseException, text: str) -> str | None:
    """Spark's error class (condition) of a pyspark exception, or the one its text names."""
    getter = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    if callable(getter):
        try:
            found = getter()
        except Exception:  # pragma: no cover - defensive, older pyspark
            found = None
        if found:
            return str(found)
    match = re.search(_ERROR_CLASS, text)
    return match.group(1) if match else None


def _connection_error(exc: BaseException, text: str, error_class: str | None, status: str | None,
                      name: str) -> SparkscopeError | None:
    """The error when the connection itself failed: a token refused, a server out of reach, a session gone.
    By the call's gRPC status; by gRPC's words only for a failure that reached us without one."""
    lowered = text.lower()
    if status == "UNAUTHENTICATED" or status is None and "authenticat" in lowered and "token" in lowered:
        return AuthenticationFailed(
            "The server rejected the connection: authentication failed",
            "Pass the right token with ;token=… in the URL or SPARK_CONNECT_AUTHENTICATE_TOKEN",
            error_class or name,
        )
    # a query's own failure (a socket source whose port nobody serves) may say "Connection refused": the server said it
    server_side = _is_pyspark(exc, "StreamingQueryException") or "JVM stacktrace" in text
    if status == "UNAVAILABLE" or status is None and not server_side and (
            "failed to connect to all addresses" in lowered or "connection refused" in lowered):
        cause = unreachable_cause(exc)
        if cause is not None:
            return cause
        return ServerUnreachable(
            "The Spark Connect server is not reachable",
            "Check that it is running (sparkscope.LocalServer().status(), for the embedded server) and the URL is right",
            error_class or name,
        )
    if error_class == "INVALID_HANDLE.SESSION_CHANGED" or "incorrect server side session identifier" in text:
        return session_changed()
    if error_class and error_class.startswith("INVALID_HANDLE"):  # INVALID_HANDLE.SESSION_CLOSED among them
        return ConnectionFailed(
            "The server no longer knows this session of this user (it was closed or timed out, or it is another "
            "user's)",
            "Connect again without session_id to start a new session",
            error_class, code="session_closed",
        )
    return None


_PYTHON_MISMATCH = r"different version:?\s*(\d+\.\d+)\s+than that in driver:?\s*(\d+\.\d+)"
_NO_MODULE = r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'"
SERVER_CHECK_HINT = "ss.server.facts.get().checks() says what the server's Python lacks"


_PYTHON_RAISED = re.compile(r"^(?:[\w.]+\.)?\w+(?:Exception|Error): .+$")


def python_raised(text: str) -> str | None:
    """For a failure inside Python code the server ran (a UDF, a foreachBatch function, the bounded sink's, a
    Python data source such as sparkscope's Kafka source): the exception its traceback ends with, without its
    module path ("KafkaDataLossError: Some data may have been lost: …"). None when the text holds no traceback."""
    if "Found error inside foreachBatch Python process" not in text and "Traceback (most recent call last):" not in text:
        return None
    before_jvm = text.split("JVM stacktrace:", 1)[0]
    raised = [line.strip() for line in before_jvm.splitlines() if _PYTHON_RAISED.match(line.strip())]
    if not raised:
        return None
    line = raised[-1]
    if line.startswith(("pyspark.", "org.apache.spark.", "java.")):  # cut by whoever shows it
        return line
    return re.sub(r"^(?:\w+\.)+(?=\w+(?:Exception|Error): )", "", line)


def _never_connected_back(text: str) -> bool:
    """Spark's words for a Python worker that did not start in time (busy, or a Python that fails at once)."""
    return "failed to connect back" in text.lower() or "waiting for the Python worker to connect back" in text


def python_probe_failure(text: str) -> tuple[str | None, str]:
    """What a failed run of Python code on the server says of its Python: (its minor version, when Spark's check
    names it; the failure in a few words)."""
    mismatch = re.search(_PYTHON_MISMATCH, text)
    if mismatch:  # PYTHON_VERSION_MISMATCH: the worker refuses a client of another minor version
        return mismatch.group(1), "another minor version"
    if _never_connected_back(text):
        return None, "its Python worker did not start in time: the server may be overloaded, or PYSPARK_PYTHON is wrong"
    program = re.search(r'Cannot run program "([^"]+)"', text)
    if program:
        return None, f"no Python at {program.group(1)}"
    return None, _first_line(text)[:200]


def answered_not_grpc(details: str) -> bool:
    """gRPC's words for a peer that answered, but not in HTTP/2 (an HTTP/1 server: not a Spark Connect server)."""
    return "Failed parsing HTTP/2" in details or "http1.x server" in details


def certificate_untrusted(details: str) -> bool:
    """gRPC's words for a TLS peer whose certificate no trusted CA signed (a plaintext peer also mentions a
    "certificate verification context", with WRONG_VERSION_NUMBER: not this case)."""
    return "CERTIFICATE_VERIFY_FAILED" in details.upper() and "WRONG_VERSION_NUMBER" not in details


# Kafka's own conditions: KAFKA_DATA_SOURCE_NOT_ENABLED since Spark 4.1, _LEGACY_ERROR_TEMP_1140 in 4.0
MISSING_DATA_SOURCE = ("DATA_SOURCE_NOT_FOUND", "KAFKA_DATA_SOURCE_NOT_ENABLED", "_LEGACY_ERROR_TEMP_1140")


def missing_data_source(exc: BaseException) -> bool:
    """The server has no data source of that name (DATA_SOURCE_NOT_FOUND, or Kafka's own condition for Kafka's;
    Spark's words where it names no condition)."""
    condition = _error_class(exc, str(exc))
    return condition in MISSING_DATA_SOURCE or (condition is None and "Failed to find data source" in str(exc))


def state_unreadable(exc: BaseException) -> str | None:
    """Why Spark's state reader could not read a checkpoint: "gone" (no committed batch, or no such path),
    "no_changelog" (RocksDB state written without changelogs, asked for its changes); None for another failure."""
    text = str(exc)
    condition = set((_error_class(exc, text) or "").split("."))  # CANNOT_LOAD_STATE_STORE.CANNOT_READ_… too
    if condition & {"STDS_COMMITTED_BATCH_UNAVAILABLE", "PATH_NOT_FOUND"}:
        return "gone"
    if "CANNOT_READ_STREAMING_STATE_FILE" in condition and ".changelog" in text:
        return "no_changelog"
    return None


def _python_worker_error(text: str) -> SparkscopeError | None:
    """One line for the ways Python code sent to the server fails there (UDFs, foreachBatch, data sources):
    another Python minor version, a module its Python lacks, a worker that never connected back."""
    mismatch = re.search(_PYTHON_MISMATCH, text)
    if mismatch:
        server, client = mismatch.group(1), mismatch.group(2)
        return pyspark_kind("UnsupportedOperation")(
            f"The server's Python is {server} and this client's is {client}: Python code sent to the server (UDFs, "
            "foreachBatch, Python data sources) needs the same minor version on both sides",
            f"Run this client with Python {server}, or use a server whose Python is {client} (docs/clusters.md)",
            "PYTHON_VERSION_MISMATCH", code="python_mismatch", data={"server": server, "client": client})
    missing = re.search(_NO_MODULE, text)
    if missing:
        module = missing.group(1)
        if module == "pyarrow":  # Spark 4.1+ runs a plain udf through Arrow unless the session says otherwise
            return pyspark_kind("UnsupportedOperation")(
                "The server's Python has no module 'pyarrow', which Arrow UDFs (the default for udf) need there",
                "For a plain udf: spark.conf.set('spark.sql.execution.pythonUDF.arrow.enabled', 'false'), or "
                "udf(…, useArrow=False); or install server-config/requirements.txt in the server's Python",
                "ModuleNotFoundError", code="server_lacks_module", data={"module": module})
        return pyspark_kind("UnsupportedOperation")(
            f"The server's Python has no module '{module}', which Python code sent to it imports",
            f"Install it in the server's Python (sparkscope's own needs are in server-config/requirements.txt); "
            f"{SERVER_CHECK_HINT}", "ModuleNotFoundError", code="server_lacks_module", data={"module": module})
    if _never_connected_back(text):
        return SparkscopeError(
            "The server could not start a Python worker for this: it did not connect back in time",
            f"The server's Python may lack a package the code imports, or the server was too busy; {SERVER_CHECK_HINT}",
            "PYTHON_WORKER_FAILED", code="python_worker_failed")
    return None


# The errors of sparkscope's jar (sparkscope/jars/src/sparkscope/v3/): its code, then its sentence. The JVM gives them
# no condition of Spark's, so their code is read from the text. Its interceptor's refusals (a token and a user id that
# do not go together) reach the client as a gRPC status's details, with the same shape.
_JAR_ERROR = re.compile(r"SPARKSCOPE_(NOT_OWNER|RING_GONE|FEED_GONE|UNKNOWN_CALL|LIMIT|NAME_TAKEN|NOT_YOUR_USER|"
                        r"NO_TOKEN|UNKNOWN_TOKEN): ([^\n\"]*)")
_JAR_HINTS: dict[str, tuple[type[SparkscopeError] | str, str, str]] = {
    "NOT_OWNER": (NotOwner, "not_owner", "Ask that user, or start a query of your own"),
    "RING_GONE": (SparkscopeError, "ring_gone", "Start the query again to keep new rows"),
    "FEED_GONE": (SparkscopeError, "feed_gone", "Make a new one with ss.source.memory(schema)"),
    "UNKNOWN_CALL": ("UnsupportedOperation", "jar_protocol", "Use a sparkscope of the same version as the jar on the "
                     "server's class path"),
    "LIMIT": (ConfigError, "server_limit", "Ask for less, or ask the server's owner to raise that setting"),
    "NAME_TAKEN": (ConfigError, "name_taken", "Pick another name"),
    "NOT_YOUR_USER": (AuthenticationFailed, "not_your_user", "A user's token acts as that user only"),
    "NO_TOKEN": (AuthenticationFailed, "authentication_failed", "Pass your token with ;token=… in the URL or "
                 "SPARK_CONNECT_AUTHENTICATE_TOKEN"),
    "UNKNOWN_TOKEN": (AuthenticationFailed, "authentication_failed", "Ask the server's owner for a token"),
}


def jar_error(text: str) -> SparkscopeError | None:
    """An error that sparkscope's jar raised on the server, as one line; None for any other."""
    found = _JAR_ERROR.search(text)
    if found is None:
        return None
    named, code, hint = _JAR_HINTS[found.group(1)]
    kind: type[SparkscopeError] = pyspark_kind(named) if isinstance(named, str) else named
    sentence, _, advice = found.group(2).strip().partition("; ")  # the jar's own advice, where it gives one
    hint = advice[:1].upper() + advice[1:] if advice else hint
    return kind(sentence[:1].upper() + sentence[1:], hint, f"SPARKSCOPE_{found.group(1)}", code=code)


def _server_out_of_memory(exc: BaseException, text: str, error_class: str | None) -> re.Match[str] | None:
    """The JVM's own OutOfMemoryError, in whatever error the dying call ended with; never the words of Python code
    the server ran (a UDF's own exception) nor a name in an analysis error (a column called OutOfMemoryError)."""
    python_code = (_is_pyspark(exc, "PythonException") or (error_class or "").startswith("PYTHON_")
                   or python_raised(text) is not None)
    if python_code:
        return None
    if "java.lang.OutOfMemoryError" in text or error_class in (None, "OutOfMemoryError"):
        return re.search(_OOM, text)
    return None


def translate(exc: BaseException) -> SparkscopeError:
    """Turn any exception raised by pyspark or gRPC into a SparkscopeError (idempotent)."""
    if isinstance(exc, SparkscopeError):
        return exc
    name = type(exc).__name__
    text = str(exc) or name
    error_class = _error_class(exc, text)
    status = _status_code(exc)
    first = _first_line(text)
    if (jar := jar_error(text)) is not None:
        return jar

    oom = _server_out_of_memory(exc, text, error_class)
    if oom:
        what = (oom.group(1) or "Java heap space").strip().rstrip(".")
        return ServerOutOfMemory(f"The Spark server ran out of memory ({what})", OOM_HINT, "OutOfMemoryError")
    connection = _connection_error(exc, text, error_class, status, name)
    if connection is not None:
        return connection
    if error_class == "NO_ACTIVE_SESSION":
        return ConfigError(
            "This DataFrame belongs to a session that was closed",
            "Build it again from the current session (spark / ss); DataFrames do not move between sessions",
            error_class,
        )
    if error_class == "OPERATION_CANCELED":
        return Cancelled("Cancelled", "", error_class)
    raw = _grpc_error(exc, status, text) if _is_grpc(exc) or status == "CANCELLED" else None
    if raw is not None:
        return raw
    worker = _python_worker_error(text) if _is_pyspark(exc) else None
    if _is_pyspark(exc, "StreamingQueryException"):
        foreign = foreign_checkpoint(text)
        if foreign is not None:
            return pyspark_kind("QueryFailed")(f"{_strip_sqlstate(first).rstrip('.')}: {foreign}", FOREIGN_CHECKPOINT_HINT,
                               error_class or name, code="foreign_checkpoint")
        if worker is not None:
            return pyspark_kind("QueryFailed")(worker.message, worker.hint, error_class or name, code=worker.code, data=worker.data)
        return pyspark_kind("QueryFailed")(_strip_sqlstate(first), "", error_class or name)
    if worker is not None:
        return worker
    python_failed = (_is_pyspark(exc, "PythonException") or (error_class or "").startswith("PYTHON_")
                     or first.endswith("Traceback (most recent call last):"))
    raised = python_raised(text) if python_failed else None
    if raised is not None:  # pyspark's own first line says only to see the stack trace, or ends where it starts
        return SparkscopeError(_strip_sqlstate(raised), "", error_class or name, code="python_exception")
    taken = re.search(_NAME_TAKEN, first)  # Spark raises it with no condition
    if taken:  # writeStream…queryName(N).start() while a query named N runs
        return ConfigError(_strip_sqlstate(first), f"Stop it first (ss.streams.stop('{taken.group(1)}')) or pick "
                           "another queryName", error_class or name, code="query_exists",
                           data={"name": taken.group(1)})
    if error_class:
        message = _strip_sqlstate(first)
        code, hint = _hint_for(error_class)
        if error_class.startswith(UNSUPPORTED_CONDITIONS):
            return pyspark_kind("UnsupportedOperation")(message, hint, error_class, code=code)
        return pyspark_kind("AnalysisError")(message, hint, error_class, code=code)
    if _is_pyspark(exc, "AnalysisException", "ParseException", "IllegalArgumentException"):
        return pyspark_kind("AnalysisError")(_strip_sqlstate(first), "", name)
    return SparkscopeError(_strip_sqlstate(first) or name, "", name)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """The one place failures cross into sparkscope: any exception from pyspark or gRPC raised
    inside leaves as a SparkscopeError, with the original as its __cause__; but the caller's own
    TypeError or ValueError, which leaves as Python raised it."""
    try:
        yield
    except SparkscopeError:
        raise
    except Exception as exc:
        error = translate(exc)
        if callers_own(exc, error):
            raise
        raise error from exc


def callers_own(exc: BaseException, error: SparkscopeError) -> bool:
    """A TypeError or ValueError of the caller's making (a wrong argument, to sparkscope or to pyspark, whose
    PySparkTypeError and PySparkValueError are both): `except TypeError` around the call must still catch it. A
    ValueError sparkscope knows more of (its translation has a code of its own) is not the caller's."""
    return isinstance(exc, (TypeError, ValueError)) and (_is_pyspark(exc) or error.code == SparkscopeError.code)


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` with its failure translated."""
    with translated():
        return fn(*args, **kwargs)
