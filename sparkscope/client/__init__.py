"""sparkscope.client: the SDK. Returns data, never prints; never imports the REPL's libraries.

AnalysisError, UnsupportedOperation and QueryFailed are pyspark's exceptions too: they load (with pyspark) when first
asked for (errors.py)."""

from typing import Any

from .errors import (
                     AuthenticationFailed,
                     Cancelled,
                     ConfigError,
                     ConnectionFailed,
                     QueryNotFound,
                     ServerError,
                     SparkscopeError,
)

__all__ = ["AnalysisError", "AuthenticationFailed", "Cancelled", "ConfigError", "ConnectionFailed", "QueryFailed",
           "QueryNotFound", "ServerError", "SparkscopeError", "UnsupportedOperation"]
WITH_PYSPARK = ("AnalysisError", "QueryFailed", "UnsupportedOperation")


def __getattr__(name: str) -> Any:
    if name in WITH_PYSPARK:
        from . import errors

        return getattr(errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
