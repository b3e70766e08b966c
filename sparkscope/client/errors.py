"""The one error hierarchy of sparkscope. Reading pyspark's and gRPC's failures into it is error_reading.py's, and
who can tell why a server stopped answering is error_causes.py's.

Every error a user can cause ends up as a `SparkscopeError` whose `str()` is one clear sentence
with a hint on what to do. The original exception stays in `__cause__` and its class name in
`error_class`, for `--debug` and `:trace`.

Three of them are pyspark's exceptions too (AnalysisError and UnsupportedOperation are AnalysisExceptions, QueryFailed
a StreamingQueryException), so that pyspark's except clauses catch them. pyspark takes a fifth of a second to import,
which `import sparkscope` and the REPL's prompt must not wait for: those three classes are made the first time they
are asked for (this module's __getattr__, or the translation of a failure, which pyspark raised), once per process.
"""

from __future__ import annotations

import re
import sys
import threading
from typing import TYPE_CHECKING, Any

from .secrets import redact


class SparkscopeError(Exception):
    """Base class: a message for the user, plus an optional hint.

    `code` names the situation stably (e.g. "query_exists") and `data` holds its particulars (e.g.
    {"name": "counts"}), so a front end can give its own hint: the SDK's hints speak Python, and the
    REPL replaces them with its commands (core/hints.py).
    """

    code = "error"

    def __init__(self, message: str, hint: str = "", error_class: str | None = None, *,
                 code: str | None = None, data: dict[str, str] | None = None):
        # Whatever its source (pyspark, gRPC, the JVM), no text leaves sparkscope with a token in it.
        self.message = _bounded(redact(message)).rstrip(".")
        self.hint = _bounded(redact(hint))
        self.error_class = error_class
        self.code = code or type(self).code
        self.data = {key: redact(str(value)) for key, value in (data or {}).items()}
        loaded = sys.modules.get("pyspark.errors")  # the classes that are pyspark's too were made with it loaded
        if loaded is not None and isinstance(self, loaded.PySparkException):  # its condition and parameters, too
            loaded.PySparkException.__init__(self, str(self), _condition(error_class), dict(self.data))
            Exception.__init__(self, str(self))
        else:
            super().__init__(str(self))

    def text(self, hint: str | None = None) -> str:
        """The sentence shown to the user, with this hint (or the error's own)."""
        hint = self.hint if hint is None else _bounded(redact(hint))
        text = self.message + ("" if self.message.endswith(("!", "?")) else ".")
        if hint:
            text += " " + hint.rstrip(".") + "."
        return text

    def __str__(self) -> str:
        return self.text()


def _condition(error_class: str | None) -> str | None:
    """Spark's error condition (UNRESOLVED_COLUMN.WITH_SUGGESTION), not a Python class name that stands in for one."""
    return error_class if error_class and re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)*", error_class) else None


MAX_WORD = 120  # a pasted blob quoted inside an error is cut, not echoed in full
MAX_MESSAGE = 400


def _bounded(text: str) -> str:
    text = re.sub(r"\S{%d,}" % (MAX_WORD + 1), lambda m: f"{m.group()[:60]}… ({len(m.group()):,} chars)", text)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


class ConfigError(SparkscopeError):
    """A bad remote URL, profile, flag or configuration value."""

    code = "config"


class ConnectionFailed(SparkscopeError):
    """The Spark Connect server cannot be reached, refused us, or went away."""

    code = "connection_failed"


class AuthenticationFailed(ConnectionFailed):
    """The server wants a token we did not give, or rejected the one we gave."""

    code = "authentication_failed"


class ServerUnreachable(ConnectionFailed):
    """Nothing answers at the server's address (refused, reset, unavailable)."""

    code = "server_unreachable"


class DeadlineExceeded(ConnectionFailed):
    """A call got no answer in time (a frozen network or a stuck server); it was abandoned."""

    code = "deadline_exceeded"


class CatalogError(SparkscopeError):
    """The query catalog (client/catalog/records.py) could not be read or written."""


class ServerError(SparkscopeError):
    """The embedded local server could not be started, stopped or found."""

    code = "server"


class RefusedDelete(SparkscopeError):
    """A delete or overwrite the guard refused (client/delete_guard.py): nothing was touched."""

    code = "refused_delete"


class FileOperationFailed(SparkscopeError):
    """A file of this machine could not be read, written, copied or removed (or only in part)."""

    code = "file_operation_failed"


class ServerOutOfMemory(SparkscopeError):
    """The Spark server (its driver JVM) ran out of memory."""

    code = "server_out_of_memory"


# The classes that are pyspark's exceptions too: name -> (pyspark's class, code, docstring). Made by pyspark_kind.
_PYSPARK_KINDS = {
    "AnalysisError": ("AnalysisException", "analysis", """Spark rejected a plan: unknown table or column, bad schema,
    bad SQL. Also pyspark's AnalysisException, so that `except AnalysisException` catches it as it catches pyspark's
    own."""),
    "UnsupportedOperation": ("AnalysisException", "unsupported", """An operation Spark does not allow on a streaming
    DataFrame or with these options (pyspark raises an AnalysisException for it, and this is one too)."""),
    "QueryFailed": ("StreamingQueryException", "query_failed", """A streaming query terminated with an exception (also
    pyspark's StreamingQueryException)."""),
}
_MAKING = threading.Lock()

if TYPE_CHECKING:  # what the classes are, for the type checker; pyspark_kind makes them
    from pyspark.errors import AnalysisException, StreamingQueryException

    class AnalysisError(SparkscopeError, AnalysisException):
        code = "analysis"

    class UnsupportedOperation(SparkscopeError, AnalysisException):
        code = "unsupported"

    class QueryFailed(SparkscopeError, StreamingQueryException):
        code = "query_failed"


def pyspark_kind(name: str) -> type[SparkscopeError]:
    """The class `name` of _PYSPARK_KINDS, made once (importing pyspark) and then this module's own."""
    made: type[SparkscopeError] | None = globals().get(name)
    if made is None:
        with _MAKING:  # two threads must not make two classes: `except` would catch one only
            made = globals().get(name)
            if made is None:
                from pyspark import errors as pyspark_errors

                base, code, doc = _PYSPARK_KINDS[name]
                made = type(name, (SparkscopeError, getattr(pyspark_errors, base)),
                            {"__doc__": doc, "code": code, "__module__": __name__, "__qualname__": name})
                globals()[name] = made
    return made


def __getattr__(name: str) -> Any:
    if name in _PYSPARK_KINDS:
        return pyspark_kind(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class NotOwner(SparkscopeError):
    """What sparkscope keeps on a server (a bounded query's rows, a memory source) belongs to another user."""

    code = "not_owner"


class QueryNotFound(SparkscopeError):
    """No query of this session has that name or id."""

    code = "query_not_found"


class Cancelled(SparkscopeError):
    """The operation was cancelled by the user (Ctrl-C). `abandoned`: the call did not end when interrupted
    and was left behind; `waited_on`: Ctrl-C ended a wait on this query, which keeps running."""

    code = "cancelled"

    def __init__(self, message: str = "The operation was cancelled", hint: str = "", error_class: str | None = None,
                 *, abandoned: bool = False, waited_on: str | None = None, by_keyboard: bool = False,
                 cell_stopped: bool | None = None):
        super().__init__(message, hint, error_class)
        self.abandoned = abandoned
        self.waited_on = waited_on
        self.by_keyboard = by_keyboard  # Ctrl-C (or a deadline) in this process, not the server, ended it
        # a user's Python cell: True when it stopped, False when it is blocked in a call and stops after it
        self.cell_stopped = cell_stopped


SESSION_CLOSED = "session_closed_here"  # the code of session_closed()'s error


def session_closed(what: str = "This sparkscope session") -> ConfigError:
    """Using a Session (or one of its queries) after its `with` block ended or close() was called."""
    return ConfigError(f"{what} is closed (its with block ended, or close() was called)",
                       "Open a new one with sparkscope.connect()", code=SESSION_CLOSED)


def session_changed(url: str = "") -> ConnectionFailed:
    """The server answered for this session's id with a session of its own making: it restarted (or dropped the
    session), and the queries of this one ended with it. pyspark closes its client then."""
    at = f" at {url}" if url else ""
    return ConnectionFailed(f"The server{at} restarted or dropped this session: its queries ended with it",
                            "Open a new session with sparkscope.connect(); Session.restart() brings back a query "
                            "from its checkpoint", "INVALID_HANDLE.SESSION_CHANGED", code="session_changed")
