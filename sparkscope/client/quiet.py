"""Keep pyspark's own log and warning output off the user's terminal.

pyspark's Connect client logs warnings through Python logging (and JSON-line PySparkLogger);
without a handler they reach stderr through logging's last-resort handler. sparkscope owns the
terminal, so they go to a file (with --debug) or nowhere.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

_LOGGERS = ("pyspark", "py4j", "grpc")
_PYSPARK_LOGGERS = ("SQLQueryContextLogger",)  # PySparkLogger instances that print JSON to stderr


def silence_pyspark(log_file: Path | None = None) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.NullHandler()
    from pyspark.logger import PySparkLogger

    loggers = [logging.getLogger(name) for name in _LOGGERS]
    loggers += [PySparkLogger.getLogger(name) for name in _PYSPARK_LOGGERS]
    for logger in loggers:
        logger.handlers = [handler]
        logger.propagate = False
    warnings.filterwarnings("ignore", module=r"pyspark(\..*)?")
    warnings.filterwarnings("ignore", category=UserWarning, message=r".*[Pp]andas.*")
