"""sparkscope.client: the SDK. Returns data, never prints; never imports the REPL's libraries."""

from .errors import (
                     AnalysisError,
                     AuthenticationFailed,
                     Cancelled,
                     ConfigError,
                     ConnectionFailed,
                     QueryFailed,
                     QueryNotFound,
                     ServerError,
                     SparkscopeError,
                     UnsupportedOperation,
)

__all__ = ["AnalysisError", "AuthenticationFailed", "Cancelled", "ConfigError", "ConnectionFailed", "QueryFailed",
           "QueryNotFound", "ServerError", "SparkscopeError", "UnsupportedOperation"]
