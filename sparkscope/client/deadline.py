"""Waits that may never end get a deadline: the caller gets an answer in time, the wait is abandoned.

RPCs get theirs from gRPC (connection/deadlines.py: `answered_within`), and nothing is left behind. This is for
what is not one thread's RPCs: pyspark's own waits (removing a listener joins its handler thread, adding one waits on
its stream) and steps that must end even when pyspark waits on a lock. The abandoned call goes on in a daemon thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from .errors import DeadlineExceeded

T = TypeVar("T")


class Call(Generic[T]):
    """`fn()` running in a daemon thread: wait for it as long as you choose, then take its result or leave it."""

    def __init__(self, fn: Callable[[], T], name: str):
        self._box: dict[str, object] = {}
        self._fn = fn
        # Its own flag, not Thread.join/is_alive: a join that Ctrl-C interrupts in the main thread can leave the
        # thread marked as stopped while it runs on (CPython 3.11), and the REPL waits in exactly such joins.
        self._ended = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self._box["value"] = self._fn()
        except BaseException as exc:  # handed to the caller
            self._box["error"] = exc
        finally:
            self._ended.set()

    def wait(self, seconds: float | None) -> bool:
        """Whether it ended within `seconds`."""
        return self._ended.wait(seconds)

    @property
    def running(self) -> bool:
        return not self._ended.is_set()

    def result(self) -> T:
        """Its value, or its error raised (once it ended)."""
        if "error" in self._box:
            raise self._box["error"]  # type: ignore[misc]
        return self._box.get("value")  # type: ignore[return-value]


def within(seconds: float, fn: Callable[[], T], what: str) -> T:
    """Return fn()'s result, re-raise its error, or raise DeadlineExceeded after `seconds`."""
    call = Call(fn, f"sparkscope-deadline-{what[:20]}")
    if not call.wait(seconds):
        raise DeadlineExceeded(f"{what[:1].upper()}{what[1:]} got no answer within {seconds:g} s",
                               "The server or the network is not responding; the call was abandoned")
    return call.result()
