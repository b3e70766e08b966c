"""Which calls are the user's: the input running in the executor's worker thread is marked (a thread-local), and
only those calls are answered differently by the REPL's pyspark habits (install.py). sparkscope.connect() users,
and sparkscope's own calls, keep pyspark's behaviour."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..context import CommandContext

_local = threading.local()


class UserCall:
    """The user's input running in this thread: its executor, and whether Ctrl-C cancelled it."""

    def __init__(self, executor: CommandContext, cancelled: threading.Event, *, interrupted_here: bool = False):
        self.executor = executor
        self.cancelled = cancelled
        self.waiting_on: str | None = None  # the query a waiting call waits on: Ctrl-C must not interrupt
        # Ctrl-C lands in this very thread (a notebook kernel runs the cell on its main thread), not in the one
        # that waits for it (the REPL's): a server call that must not be interrupted then runs beside it
        self.interrupted_here = interrupted_here


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


def mark_user_code(call: UserCall | None) -> None:
    """Mark this thread as running the user's input (None: no longer), for a front end whose cells begin and end
    in hooks (IPython's pre_run_cell and post_run_cell) rather than in one call."""
    _local.call = call


@contextlib.contextmanager
def choosing_kafka() -> Iterator[None]:
    """While sparkscope itself asks which Kafka the session has: its probe reads format("kafka"), which must reach
    pyspark unchanged."""
    _local.choosing_kafka = True
    try:
        yield
    finally:
        _local.choosing_kafka = False


def is_choosing_kafka() -> bool:
    return bool(getattr(_local, "choosing_kafka", False))
