"""Deadlines on the RPCs a thread makes, through gRPC itself: `answered_within(5, fn, what)` runs `fn` in the calling
thread, and every RPC it makes on a session's channel carries what is left of the 5 s as its gRPC deadline.

pyspark gives its RPCs no deadline, so a frozen network can block a call for minutes. `deadline.within()` answers in
time by leaving the call in a daemon thread, which stays blocked until the connection dies: a monitor polling a frozen
server every second would leave a thread a second. Here the RPC itself ends at its deadline (DEADLINE_EXCEEDED,
which pyspark's retry policy does not retry), and nothing is left behind.

`within()` stays for waits that are not RPCs: pyspark's own thread joins (removing a listener), and steps that must
end even when pyspark waits on a lock.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc

from ..errors import DeadlineExceeded

T = TypeVar("T")
_SMALLEST = 0.001  # seconds: a call made once the deadline has passed fails at once (gRPC takes no 0 or less)

_thread = threading.local()


@contextlib.contextmanager
def rpc_deadline(seconds: float) -> Iterator[float]:
    """The RPCs this thread makes inside get at most `seconds` from now, all together (an inner deadline that ends
    later than an outer one keeps the outer one). Yields the deadline, on time.monotonic()'s clock."""
    outer: float | None = getattr(_thread, "deadline", None)
    at = time.monotonic() + max(0.0, seconds)
    _thread.deadline = at if outer is None else min(outer, at)
    try:
        yield _thread.deadline
    finally:
        _thread.deadline = outer


def seconds_left() -> float | None:
    """What is left of this thread's deadline (None: it has none)."""
    at: float | None = getattr(_thread, "deadline", None)
    return None if at is None else at - time.monotonic()


def answered_within(seconds: float, fn: Callable[[], T], what: str) -> T:
    """fn()'s result, its error, or DeadlineExceeded once `seconds` have passed with its RPCs unanswered."""
    with rpc_deadline(seconds) as at:
        try:
            return fn()
        except Exception as exc:
            if time.monotonic() < at:
                raise
            raise DeadlineExceeded(f"{what[:1].upper()}{what[1:]} got no answer within {seconds:g} s",
                                   "The server or the network is not responding") from exc


class _CallDetails(collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials",
                                                           "wait_for_ready", "compression")),
                   grpc.ClientCallDetails):
    """grpc.ClientCallDetails with another timeout (gRPC's own is abstract)."""


def _bounded(details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
    left = seconds_left()
    if left is None:
        return details
    timeout = max(_SMALLEST, left) if details.timeout is None else min(details.timeout, max(_SMALLEST, left))
    return _CallDetails(details.method, timeout, details.metadata, details.credentials,
                        getattr(details, "wait_for_ready", None), getattr(details, "compression", None))


class DeadlineInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                          grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Gives each RPC made under `rpc_deadline` what is left of the thread's deadline as its gRPC timeout; the rest
    go as they came (the listener's long-lived stream, pyspark's background releases)."""

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(_bounded(client_call_details), request)

    def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(_bounded(client_call_details), request)

    def intercept_stream_unary(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return continuation(_bounded(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation: Any, client_call_details: Any, request_iterator: Any) -> Any:
        return continuation(_bounded(client_call_details), request_iterator)
