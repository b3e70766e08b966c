"""Waiting calls never stop a stream. Spark Connect stops a query when the operation waiting on it is interrupted,
so Ctrl-C must not interrupt: awaitTermination and awaitAnyTermination wait in slices of a second, and Ctrl-C ends
the wait between two; processAllAvailable, which cannot be sliced, is left to finish on its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ...client.logs import log
from ...client.queries.query import wait_in_slices
from .user_code import StoppedWaiting, UserCall, current


def _sliced(call: UserCall, what: str, wait: Any, timeout: float | None) -> bool | None:
    """Wait a slice at a time; Ctrl-C (the call cancelled) stops waiting between two slices."""
    call.waiting_on = what
    try:
        ended = _beside(call, lambda: wait_in_slices(wait, timeout, call.cancelled))
    finally:
        call.waiting_on = None
    if ended is None:
        raise StoppedWaiting(what)
    return None if timeout is None else ended


def _beside(call: UserCall, work: Callable[[], Any]) -> Any:
    """Run `work` (server calls that must not be interrupted) where Ctrl-C cannot reach it. In the REPL it already
    runs so: Ctrl-C lands in the thread that waits for the input, which sets `call.cancelled`. In a notebook kernel
    Ctrl-C is a KeyboardInterrupt in the cell's own thread: `work` runs in another one, this one waits for it, and
    Ctrl-C cancels the call (a sliced wait ends between two slices) and stops this wait at once."""
    if not call.interrupted_here:
        return work()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="sparkscope-wait", daemon=True).start()
    try:
        log.debug("waiting for %s beside its server calls: Ctrl-C ends the wait, not the query", call.waiting_on)
        # polling a fact (the call ended), so that Ctrl-C is heard between two checks: a flag and a sleep, not
        # done.wait(), whose Condition a KeyboardInterrupt landing between its release and its re-acquire leaves
        # unlocked ("RuntimeError: release unlocked lock" in place of the interrupt, seen in IPython)
        while not done.is_set():
            time.sleep(0.05)
    except KeyboardInterrupt:
        call.cancelled.set()
        raise StoppedWaiting(call.waiting_on or "the query") from None
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _valid_timeout(timeout: Any) -> bool:
    return timeout is None or (isinstance(timeout, (int, float)) and timeout > 0)


def await_termination(original: Any, query: Any, timeout: Any = None) -> Any:
    call = current()
    if call is None or not _valid_timeout(timeout):  # pyspark's own check and message
        return original(query) if timeout is None else original(query, timeout)
    return _sliced(call, query.name or query.id, lambda seconds: original(query, seconds), timeout)


def await_any_termination(original: Any, manager: Any, timeout: Any = None) -> Any:
    call = current()
    if call is None or not _valid_timeout(timeout):
        return original(manager) if timeout is None else original(manager, timeout)
    return _sliced(call, "any query", lambda seconds: original(manager, seconds), timeout)


def process_all_available(original: Any, query: Any) -> Any:
    call = current()
    if call is None:
        return original(query)
    call.waiting_on = query.name or query.id  # one server call: Ctrl-C leaves it to end by itself
    try:
        return _beside(call, lambda: original(query))
    finally:
        call.waiting_on = None
