"""The one error hierarchy of sparkscope, and the translation of pyspark/gRPC failures into it.

Every error a user can cause ends up as a `SparkscopeError` whose `str()` is one clear sentence
with a hint on what to do. The original exception stays in `__cause__` and its class name in
`error_class`, for `--debug` and `:trace`.
"""

from __future__ import annotations

import re

from .secrets import redact


class SparkscopeError(Exception):
    """Base class: a message for the user, plus an optional hint."""

    def __init__(self, message: str, hint: str = "", error_class: str | None = None):
        # Whatever its source (pyspark, gRPC, the JVM), no text leaves sparkscope with a token in it.
        self.message = _bounded(redact(message)).rstrip(".")
        self.hint = _bounded(redact(hint))
        self.error_class = error_class
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.message + ("" if self.message.endswith(("!", "?")) else ".")
        if self.hint:
            text += " " + self.hint.rstrip(".") + "."
        return text


MAX_WORD = 120  # a pasted blob quoted inside an error is cut, not echoed in full
MAX_MESSAGE = 400


def _bounded(text: str) -> str:
    text = re.sub(r"\S{%d,}" % (MAX_WORD + 1), lambda m: f"{m.group()[:60]}… ({len(m.group()):,} chars)", text)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


class ConfigError(SparkscopeError):
    """A bad remote URL, profile, flag or configuration value."""


class ConnectionFailed(SparkscopeError):
    """The Spark Connect server cannot be reached, refused us, or went away."""


class AuthenticationFailed(ConnectionFailed):
    """The server wants a token we did not give, or rejected the one we gave."""


class ServerUnreachable(ConnectionFailed):
    """Nothing answers at the server's address (refused, reset, unavailable)."""


class DeadlineExceeded(ConnectionFailed):
    """A call got no answer in time (a frozen network or a stuck server); it was abandoned."""


class ServerError(SparkscopeError):
    """The embedded local server could not be started, stopped or found."""


class AnalysisError(SparkscopeError):
    """Spark rejected a plan: unknown table or column, bad schema, bad SQL."""


class UnsupportedOperation(SparkscopeError):
    """An operation Spark does not allow on a streaming DataFrame or with these options."""


class QueryNotFound(SparkscopeError):
    """No query of this session has that name or id."""


class QueryFailed(SparkscopeError):
    """A streaming query terminated with an exception."""


class Cancelled(SparkscopeError):
    """The operation was cancelled by the user (Ctrl-C)."""


_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)*)\]")


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line
    return text.strip()


def _strip_sqlstate(text: str) -> str:
    text = re.sub(r"\s*SQLSTATE: \w+", "", text)
    text = re.sub(r"[;.]*\s*line \d+ pos \d+;?$", "", text.strip())
    text = text.replace(".;", ".")
    text = _ERROR_CLASS.sub("", text, count=1).strip()
    return text.rstrip(";. ")


def _hint_for(error_class: str) -> str:
    base = error_class.split(".")[0]
    hints = {
        "TABLE_OR_VIEW_NOT_FOUND": "Check the name with :sql SHOW TABLES, or start the query that creates it",
        "UNRESOLVED_COLUMN": "Check the column names with :schema",
        "PARSE_SYNTAX_ERROR": "Check the SQL or DDL syntax",
        "UNSUPPORTED_FEATURE": "",
        "INVALID_SESSION_ID": "Reconnect without --session-id to start a new session",
    }
    return hints.get(base, "")


def translate(exc: BaseException) -> SparkscopeError:
    """Turn any exception raised by pyspark or gRPC into a SparkscopeError (idempotent)."""
    if isinstance(exc, SparkscopeError):
        return exc
    name = type(exc).__name__
    text = str(exc) or name
    error_class = None
    getter = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    if callable(getter):
        try:
            error_class = getter()
        except Exception:  # pragma: no cover - defensive, older pyspark
            error_class = None
    if not error_class:
        match = _ERROR_CLASS.search(text)
        error_class = match.group(1) if match else None
    first = _first_line(text)
    lowered = text.lower()

    if "UNAUTHENTICATED" in text or "authenticat" in lowered and "token" in lowered:
        return AuthenticationFailed(
            "The server rejected the connection: authentication failed",
            "Pass the right token with ;token=… in the URL or SPARK_CONNECT_AUTHENTICATE_TOKEN",
            error_class or name,
        )
    if "StatusCode.UNAVAILABLE" in text or "failed to connect to all addresses" in lowered or (
        "connection refused" in lowered
    ):
        return ServerUnreachable(
            "The Spark Connect server is not reachable",
            "Check that it is running (sparkscope server status) and the URL is right",
            error_class or name,
        )
    if error_class and error_class.startswith("INVALID_HANDLE") or "SESSION_CLOSED" in text:
        return ConnectionFailed(
            "The server no longer knows this session (it was closed or timed out)",
            "Reconnect without --session-id to start a new session",
            error_class,
        )
    if error_class == "NO_ACTIVE_SESSION":
        return ConfigError(
            "This DataFrame belongs to a session that was closed",
            "Build it again from the current session (spark / ss); DataFrames do not move between sessions",
            error_class,
        )
    if "OPERATION_CANCELED" in text or "cancelled" in lowered and "operation" in lowered:
        return Cancelled("Cancelled", "", error_class or name)
    if name in ("StreamingQueryException",):
        return QueryFailed(_strip_sqlstate(first), "", error_class or name)
    if error_class:
        message = _strip_sqlstate(first)
        hint = _hint_for(error_class)
        if error_class.startswith(("STREAMING_", "UNSUPPORTED_", "INVALID_")) or "streaming" in lowered:
            return UnsupportedOperation(message, hint, error_class)
        return AnalysisError(message, hint, error_class)
    if name in ("AnalysisException", "ParseException", "IllegalArgumentException"):
        return AnalysisError(_strip_sqlstate(first), "", name)
    return SparkscopeError(_strip_sqlstate(first) or name, "", name)
