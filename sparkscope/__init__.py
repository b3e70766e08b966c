"""sparkscope: a Spark Connect thin client and REPL for Structured Streaming.

    import sparkscope
    with sparkscope.connect() as ss:
        q = ss.start(ss.source.rate(10), "ticks")

Heavy modules (pyspark) load on first use, so `import sparkscope` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .client import (  # the error hierarchy (the three that are pyspark's exceptions too load with pyspark)
    AuthenticationFailed,
    Cancelled,
    ConfigError,
    ConnectionFailed,
    QueryNotFound,
    ServerError,
    SparkscopeError,
)

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from .client.monitoring.progress import Latency, Progress
    from .client.queries.query import Query, QueryInfo
    from .client.rows import Rows
    from .client.errors import AnalysisError, QueryFailed, UnsupportedOperation
    from .client.session import Session
    from .server.connecting import connect
    from .server.local import LocalServer

# where each lazily loaded name of the API lives (tests/unit/test_public_api.py imports every one)
_LAZY = {"connect": "server.connecting", "Session": "client.session", "Query": "client.queries.query",
         "QueryInfo": "client.queries.query", "Progress": "client.monitoring.progress", "Rows": "client.rows",
         "Latency": "client.monitoring.progress",
         "LocalServer": "server.local", "AnalysisError": "client.errors", "QueryFailed": "client.errors",
         "UnsupportedOperation": "client.errors"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'sparkscope' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext sparkscope` in IPython or a Jupyter kernel: spark, ss, display and dbutils, and the REPL's colon
    commands as magics (sparkscope/notebook/)."""
    from .notebook.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext sparkscope`: its magics and names go and what they replaced comes back; the session ends, its
    queries run on."""
    from .notebook.extension import unload

    unload(ipython)


# Latency, LocalServer, Progress, Query, QueryInfo, Rows, Session, connect and the three errors that are pyspark's too load
# lazily through __getattr__ above.
__all__ = ["AnalysisError", "AuthenticationFailed", "Cancelled", "ConfigError", "ConnectionFailed", "Latency",
           "LocalServer",
           "Progress", "Query", "QueryFailed", "QueryInfo", "QueryNotFound", "Rows", "ServerError", "Session",
           "SparkscopeError", "UnsupportedOperation", "__version__", "connect"]
