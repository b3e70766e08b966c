"""A started streaming query: the pyspark handle plus what sparkscope knows about how it was started."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._pyspark import query_explain_string
from ..catalog.checkpoints import WRITE_FAILURES, Resumption, no_space_at
from ..errors import QueryFailed, SparkscopeError, UnsupportedOperation, session_closed
from ..error_reading import call, summarise_error, translate
from .planning import Retention, Trigger
from ..logs import swallowed
from ..monitoring.progress import Progress
from .._pyspark.arrow import fetch
from ..rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.streaming.query import StreamingQuery as ConnectStreamingQuery
    from pyspark.sql.streaming import StreamingQuery as ClassicStreamingQuery

    StreamingQuery = ConnectStreamingQuery | ClassicStreamingQuery  # toTable() is typed as the classic one

T = TypeVar("T")
AWAIT_SLICE = 1.0  # seconds per awaitTermination call: the longest a cancelled wait lingers on the server


@dataclass(frozen=True)
class QueryError:
    """Why a query failed: a one-line summary and the full text (with the JVM stack trace)."""

    short: str
    full: str
    error_class: str | None = None

    def __str__(self) -> str:
        return self.short


@dataclass
class QueryInfo:
    """One row of `ss.streams.queries()`."""

    name: str
    id: str
    state: str  # active | stopped | failed
    sink: str
    mode: str
    trigger: str
    last_batch: int | None
    input_rows_per_second: float
    processed_rows_per_second: float
    error: str | None = None
    checkpoint: str | None = None
    keep: str | None = None  # what a bounded sink keeps, e.g. "last 10,000 rows"
    behind: int | None = None  # records its Kafka sources are behind the newest offsets (None: no Kafka)


def wait_in_slices(wait: Callable[[float], Any], timeout: float | None = None,
                   cancelled: threading.Event | None = None) -> bool | None:
    """Wait with `wait(seconds) -> ended` (a query's or the manager's awaitTermination) one short server
    call at a time: True when it ended, False when `timeout` passed, None when `cancelled` was set.
    Interrupting a server call that waits on a query stops the query (pyspark 4.3), so a cancelled
    wait must end between two calls instead."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not (cancelled is not None and cancelled.is_set()):
        left = AWAIT_SLICE if deadline is None else min(AWAIT_SLICE, deadline - time.monotonic())
        # pyspark 4.3 annotates int but takes a float (it sends int(timeout * 1000) ms)
        if wait(max(0.001, left)):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
    return None


class SinkOwner(Protocol):
    """What a query asks of the session that knows it, to read what its sink kept."""

    @property
    def spark(self) -> Any: ...


    @property
    def client(self) -> SinkReading: ...


class SinkReading(Protocol):
    """What a query asks of its session's sink reader."""

    def sink_dataframe(self, name_or_query: str | Query) -> DataFrame: ...

    def batch_dataframe(self, query: Query, batch_id: int) -> DataFrame: ...


class Query:
    """A streaming query started by (or found in) a sparkscope session."""

    def __init__(self, handle: StreamingQuery, *, name: str, sink: str = "memory", mode: str = "append",
                 trigger: Trigger | None = None, checkpoint: str | None = None, path: str | None = None,
                 table: str | None = None, fmt: str | None = None, warning: str | None = None,
                 keep: Retention | None = None, view: str | None = None):
        self._handle = handle
        # told when this process sees the query end: (query, "stopped" | "failed", short error)
        self.on_end: Callable[[Query, str, str | None], None] | None = None
        self.owner: SinkOwner | None = None  # the session that knows it (QueryManager.add): its sink is read through it
        self.restart_note: str | None = None  # why the catalog cannot restart it, when it cannot
        # adds to a progress what Spark's lacks: a real-time query's latency, which its ring measured (QueryManager.add)
        self.measure: Callable[[Progress], Progress] | None = None
        self.name = name
        self.id: str = handle.id
        self.run_id: str = handle.runId
        self.sink = sink
        self.mode = mode
        self.trigger = trigger or Trigger()
        self.checkpoint = checkpoint
        self.path = path
        self.table = table
        self.format = fmt
        self.warning = warning
        self.notes: list[str] = []  # lines to show when it starts (which Kafka implementation runs, and why)
        self.keep = keep  # bounded sink: what it keeps
        self.view = view  # bounded sink: the server's global temporary view with the kept rows
        self.resumption: Resumption | None = None  # a restarted query: where it went on from
        self.files_here = False  # its checkpoint and path are files of this machine (the server runs here)
        self._final_state: str | None = None
        self._final_error: QueryError | None = None
        self._final_progress: Progress | None = None

    def _ask(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`call(fn)`, saying so when the query's session was closed (pyspark says NO_ACTIVE_SESSION)."""
        try:
            return call(fn, *args, **kwargs)
        except SparkscopeError as exc:
            if exc is self._explained(exc):
                raise
            raise self._explained(exc) from exc

    def _explained(self, error: SparkscopeError) -> SparkscopeError:
        if error.error_class == "NO_ACTIVE_SESSION":
            return session_closed(f"The session of query {self.name}")
        return error

    def __repr__(self) -> str:
        return f"<Query {self.name} id={self.id[:8]} sink={self.sink} mode={self.mode} trigger={self.trigger}>"

    @property
    def handle(self) -> StreamingQuery:
        """The underlying pyspark StreamingQuery."""
        return self._handle

    # -- state --------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        if self._final_state is not None:
            return False
        return bool(self._ask(lambda: self._handle.isActive))

    def known_state(self) -> str | None:
        """The final state if this process has seen the query end (no RPC), else None."""
        return self._final_state

    @property
    def final_error(self) -> QueryError | None:
        return self._final_error

    @property
    def state(self) -> str:
        """active, stopped or failed."""
        if self._final_state is not None:
            return self._final_state
        if self.is_active:
            return "active"
        self._final_error = self.exception
        self._final_progress = self.progress
        self._final_state = "failed" if self._final_error else "stopped"
        if self.on_end is not None:
            self.on_end(self, self._final_state, self._final_error.short if self._final_error else None)
        return self._final_state

    @property
    def status(self) -> dict[str, Any]:
        """Spark's status: message, isDataAvailable, isTriggerActive."""
        return dict(self._ask(lambda: self._handle.status))

    @property
    def exception(self) -> QueryError | None:
        if self._final_error is not None:
            return self._final_error
        exc = self._ask(self._handle.exception)
        if exc is None:
            return None
        full = str(exc)
        short = summarise_error(full)
        if self.files_here and any(word in full for word in WRITE_FAILURES):
            full_disk = no_space_at([self.checkpoint, self.path])
            if full_disk is not None:
                short = f"No space left at {full_disk[0]} ({full_disk[1] // 1024:,} KiB free): {short}"
        return QueryError(short=short, full=full, error_class=getattr(exc, "getCondition", lambda: None)())

    # -- progress -----------------------------------------------------------------------------
    @property
    def progress(self) -> Progress | None:
        if self._final_state is not None:
            return self._final_progress
        last = self._ask(lambda: self._handle.lastProgress)
        if last is None:
            return None
        progress = Progress.from_json(json.loads(last.json))
        if self.measure is not None:
            with swallowed(f"measuring the latency of {self.name}"):
                progress = self.measure(progress)
        return progress

    @property
    def history(self) -> list[Progress]:
        recent = self._ask(lambda: self._handle.recentProgress)
        return [Progress.from_json(json.loads(p.json)) for p in recent]

    def explain(self, extended: bool = False) -> str:
        return self._ask(query_explain_string, self._handle, extended).rstrip("\n")

    # -- control ------------------------------------------------------------------------------
    def await_termination(self, timeout: float | None = None, cancelled: threading.Event | None = None) -> bool:
        """True when the query ended within `timeout` seconds; raises QueryFailed if it failed.

        Waits in one-second server calls, checking `cancelled` in between: interrupting a server call
        that waits on a query stops the query (pyspark 4.3), so a cancelled wait just stops waiting."""
        try:
            wait = self._handle.awaitTermination
            return bool(wait_in_slices(wait, timeout, cancelled))  # type: ignore[arg-type]
        except Exception as exc:
            error = self._explained(translate(exc))
            if isinstance(error, QueryFailed) or "StreamingQueryException" in type(exc).__name__:
                raise QueryFailed(f"Query {self.name} failed: {summarise_error(str(exc))}", "",
                                  type(exc).__name__) from exc
            raise error from exc

    def rows(self, limit: int = 100_000) -> Rows:
        """What its sink holds now, at most `limit` rows: the bounded sink's newest batch first, the memory sink's
        table, a file sink's files."""
        return fetch(self._owner().client.sink_dataframe(self), limit)

    def batch_rows(self, batch_id: int, limit: int = 100_000) -> Rows:
        """The rows batch `batch_id` wrote, while the bounded sink keeps them."""
        return fetch(self._owner().client.batch_dataframe(self, batch_id), limit)

    def _owner(self) -> SinkOwner:
        if self.owner is None:
            raise UnsupportedOperation(f"{self.name} was not started or found by a sparkscope session",
                                       "Read it through ss.streams.get(name)")
        return self.owner

    def process_all_available(self) -> None:
        """Block until everything available in the sources has been processed (never on a rate source)."""
        try:
            self._handle.processAllAvailable()
        except Exception as exc:
            error = self._explained(translate(exc))
            if not self.is_active and self.exception:
                raise QueryFailed(f"Query {self.name} failed: {self.exception.short}", "", error.error_class) from exc
            raise error from exc

    def stop(self) -> None:
        self._ask(self._handle.stop)
        if self.on_end is not None:
            self.on_end(self, "stopped", None)

    def info(self, active: bool | None = None, latest: Progress | None = None) -> QueryInfo:
        """One row of `ss.streams.queries()`; the caller may already know whether it is active and its last progress."""
        state = "active" if active else self.state
        last = latest if latest is not None else self.progress
        error = self._final_error.short if self._final_error else None
        return QueryInfo(
            name=self.name, id=self.id, state=state, sink=self.sink, mode=self.mode, trigger=str(self.trigger),
            last_batch=last.batch_id if last else None,
            input_rows_per_second=last.input_rows_per_second if last else 0.0,
            processed_rows_per_second=last.processed_rows_per_second if last else 0.0,
            error=error, checkpoint=self.checkpoint, keep=str(self.keep) if self.keep else None,
            behind=last.offsets_behind if last else None,
        )
