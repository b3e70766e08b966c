"""Calls that may never return get a deadline: the caller gets an answer in time, the call is abandoned.

pyspark's RPCs have no deadline of their own, so a frozen network (or a server that still holds an
old listener) can block a call for minutes. Background threads and interactive commands wrap such
calls here; the abandoned call goes on in a daemon thread and ends with the connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from .errors import DeadlineExceeded

T = TypeVar("T")


def within(seconds: float, fn: Callable[[], T], what: str) -> T:
    """Return fn()'s result, re-raise its error, or raise DeadlineExceeded after `seconds`."""
    box: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=f"sparkscope-deadline-{what[:20]}", daemon=True).start()
    if not done.wait(seconds):
        raise DeadlineExceeded(f"{what[:1].upper()}{what[1:]} got no answer within {seconds:g} s",
                               "The server or the network is not responding; the call was abandoned")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")  # type: ignore[return-value]
