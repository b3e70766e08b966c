"""Where the command line's diagnostics go: notices to the terminal, everything else to the client log.

The SDK adds no logging handlers and touches no warning filters; the CLI owns the terminal, so it
decides here. pyspark's Connect client logs through Python logging (and PySparkLogger prints JSON
lines to stderr); gRPC's C core writes to fd 2 on its own. All of that goes to
`<state>/client.log` (0600, tokens redacted), together with the `sparkscope` logger's debug
records: the failures the client ignored on purpose. `--debug` shows those on the terminal too.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path

from ..client.paths import state_dir
from ..client.secrets import redact
from ..client import delete_guard

LOG_NAME = "client.log"
_THIRD_PARTY = ("pyspark", "py4j", "grpc")
_PYSPARK_LOGGERS = ("SQLQueryContextLogger",)  # PySparkLogger instances that print JSON to stderr


_to_file: logging.Handler = logging.NullHandler()


class _Redacting(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def client_log() -> Path:
    return state_dir() / LOG_NAME


def _file_handler() -> logging.Handler:
    path = client_log()
    os.close(delete_guard.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(_Redacting("%(asctime)s %(name)s %(levelname)s %(message)s"))
    return handler


class _ToCurrentStderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record comes: while the prompt is shown, that is prompt-toolkit's
    proxy, which prints above the prompt (a stream fixed at start wrote onto the prompt's line)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure(debug: bool = False) -> None:
    """Notices ('notice: …') on stderr, debug records and third-party logs in the client log."""
    notices = _ToCurrentStderr()
    notices.setFormatter(_Redacting("notice: %(message)s" if not debug else "%(levelname)s %(name)s: %(message)s"))
    notices.setLevel(logging.DEBUG if debug else logging.INFO)
    logger = logging.getLogger("sparkscope")
    logger.setLevel(logging.DEBUG)
    logger.handlers = [notices]
    logger.propagate = False
    global _to_file
    try:
        _to_file = _file_handler()
        logger.addHandler(_to_file)
    except OSError:  # a read-only state dir: the terminal still gets the notices
        _to_file = logging.NullHandler()
    for name in _THIRD_PARTY:  # without importing pyspark: the first prompt draws before it loads
        logging.getLogger(name).handlers = [_to_file]
        logging.getLogger(name).propagate = False
    if not debug:
        warnings.filterwarnings("ignore", module=r"pyspark(\..*)?")
        warnings.filterwarnings("ignore", category=UserWarning, message=r".*[Pp]andas.*")


def quiet_pyspark_loggers() -> None:
    """pyspark's own JSON loggers, once pyspark is being loaded anyway (before the first session)."""
    from pyspark.logger import PySparkLogger

    for name in _PYSPARK_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        logger.handlers = [_to_file]
        logger.propagate = False


def quiet_stderr() -> None:
    """Send what C code writes to fd 2 to the client log; Python's sys.stderr keeps the terminal."""
    log = delete_guard.open_fd(client_log(), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    saved = os.dup(2)
    os.dup2(log, 2)
    os.close(log)
    sys.stderr = os.fdopen(saved, "w", buffering=1)  # the notices follow it (_ToCurrentStderr)
