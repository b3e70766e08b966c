"""Console-sink output on the client: each new micro-batch of a query, as rows.

Spark's console sink prints on the server's stdout, which a Spark Connect client never sees. A
Tail listens to the monitor and, after each batch, reads what that batch wrote. The bounded sink
marks each row with its batch, so that is exact. Spark's memory sink appends in batch order: in
append and update mode a batch's rows are the sink rows its progress counts, after those of the
batches before (read late, the table already holds later batches' rows too); in complete mode the
whole result.
Reading happens on the Tail's own thread, so the monitor's event thread never waits on the server.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import SparkscopeError, UnsupportedOperation
from ..error_reading import translate
from ..monitoring.monitor import Event
from .._pyspark.arrow import fetch
from ..rows import Rows

if TYPE_CHECKING:  # pragma: no cover

    from ..monitoring.monitor import Monitor
    from ..monitoring.progress import Progress
    from .query import Query, SinkReading


class TailedSession(Protocol):
    """What a tail uses of a Session."""

    @property
    def spark(self) -> Any: ...


    @property
    def streams(self) -> TailedQueries: ...

    @property
    def client(self) -> SinkReading: ...


class TailedQueries(Protocol):
    """What a tail uses of a Session's queries (ss.streams)."""

    @property
    def monitor(self) -> Monitor: ...


CONTINUOUS_POLL_MIN = 0.5  # seconds: the shortest interval a continuous query's epochs are looked for at
TAIL_LOOK = 0.5  # seconds: how often a follower looks whether its query ended while no batch came


def ran_a_batch(progress: Progress) -> bool:
    """Whether the progress reports a batch that ran: a trigger that found no new data reports the id of the batch
    still to come, with no addBatch (a memory source's first trigger does, before its rows arrive)."""
    return "addBatch" in progress.durations_ms or progress.input_rows > 0


def _epoch(status_message: str) -> int | None:
    """The epoch a continuous query commits now, from its status ("Committing epoch 27"), or None."""
    match = re.search(r"epoch (\d+)", status_message)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class TailBatch:
    query: str
    batch_id: int
    rows: Rows
    total: int  # rows the batch produced (complete mode: rows in the result)
    mode: str

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.rows.rows))


class Tail:
    def __init__(self, session: TailedSession, query: Query, on_batch: Callable[[TailBatch], None],
                 on_error: Callable[[str], None] | None = None, limit: int = 20, empty: bool = False):
        if query.sink != "memory" and not query.view:
            raise UnsupportedOperation(f"{query.name} writes to a {query.sink} sink; only queries of the default "
                                       "or memory sink can be tailed",
                                       f"Start it with the default sink: ss.start(df, '{query.name}')",
                                       code="sink_not_tailable", data={"name": query.name})
        self.session = session
        self.query = query
        self.limit = limit
        self.empty = empty  # batches that wrote nothing are told too (Spark's console sink prints their header)
        self._on_batch = on_batch
        self._on_error = on_error or (lambda message: None)
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._seen_rows = 0
        self._last_batch = -1
        self._batches_read = -1  # the memory sink's rows through this batch are the first _seen_rows
        self._unsubscribe: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None
        self.active = False
        self._stopped = False  # stop() was called: a batch read meanwhile is not printed
        self._printing = threading.RLock()  # held while a batch prints: stop() returns only once it is printed
        self._wake = threading.Event()  # ends a continuous query's polling at once

    def start(self, from_start: bool = False) -> Tail:
        """Print the batches that come from now on; `from_start` (a query just started, as a console
        sink prints it): from its first batch, also when that batch ended before this call."""
        if not self.query.view and not from_start:
            table = self.session.spark.table(self.query.name)
            self._seen_rows = self._count(table) if self.query.mode != "complete" else 0
        latest = None if from_start else self.query.progress
        told = -1 if latest is None else latest.batch_id if ran_a_batch(latest) else latest.batch_id - 1
        self._last_batch = self._batches_read = told
        self.active = True
        if self.query.trigger.kind == "continuous":  # no progress events: its epochs are polled as they commit
            self._thread = threading.Thread(target=self._poll_epochs, name=f"sparkscope-tail-{self.query.name}",
                                            daemon=True)
            self._thread.start()
            return self
        self._thread = threading.Thread(target=self._run, name=f"sparkscope-tail-{self.query.name}", daemon=True)
        self._thread.start()
        self._unsubscribe = self.session.streams.monitor.subscribe(self._on_event)
        if from_start:  # a batch that ended before the subscription: read now (a later event is skipped)
            done = self.query.progress
            if done is not None:
                self._events.put(Event("progress", self.query.id, self.query.name, progress=done))
        return self

    def finish(self, timeout: float) -> None:
        """After its query was stopped: print the batches it wrote before it ended, then stop, so that no batch prints
        after the caller says the query stopped (Spark's console sink printed them before stop() returned). The
        events already here are read first; a batch whose event had not come yet (a listener's events lag, a poll's
        more) is read from the query's own record of its last batches. A read under way is waited for at most
        `timeout` seconds."""
        thread = self._thread
        if thread is not None and self._unsubscribe is not None:  # its batches come as events
            self._unsubscribe()
            self._events.put(None)  # the thread ends after the events already queued
            thread.join(timeout)
            if not thread.is_alive():
                self._tell_the_rest()
        elif thread is not None:
            thread.join(timeout)
        self.stop()

    def _tell_the_rest(self) -> None:
        """The batches of the ended query that no event told: its last progress reports, as the server keeps them."""
        try:
            history = self.query.history
        except Exception as exc:
            self._on_error(f"tail {self.query.name}: {translate(exc)}")
            return
        for progress in history:
            self._tell(progress)

    def stop(self) -> None:
        """Stop: once this returns, nothing of this tail prints any more."""
        with self._printing:
            self._stopped = True
        self._wake.set()
        if not self.active:
            return
        self.active = False
        if self._unsubscribe:
            self._unsubscribe()
        self._events.put(None)

    def _on_event(self, event: Event) -> None:
        if event.query_id != self.query.id:
            return
        if event.kind in ("progress", "terminated"):
            self._events.put(event)

    def _run(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            if event.kind == "terminated":
                self.active = False
                if self._unsubscribe:
                    self._unsubscribe()
                return
            if event.progress is not None:
                self._tell(event.progress)

    def _tell(self, progress: Progress) -> None:
        """Print the batch `progress` reports, unless it was told or wrote nothing."""
        if progress.batch_id <= self._last_batch or not ran_a_batch(progress):
            return
        self._last_batch = progress.batch_id
        try:
            batch = self._read(progress.batch_id, progress.input_rows, progress.sink_rows)
        except SparkscopeError as exc:
            self._on_error(f"tail {self.query.name}: {exc}")
            return
        except Exception as exc:
            self._on_error(f"tail {self.query.name}: {translate(exc)}")
            return
        self._print(batch)

    def _poll_epochs(self) -> None:
        """A continuous query reports no progress per epoch: at each checkpoint interval, the rows its memory sink
        got since the last look, under the epoch it commits now (Spark's console sink heads each epoch so)."""
        every = max(CONTINUOUS_POLL_MIN, self.query.trigger.seconds or 1.0)
        while not self._wake.wait(every):
            try:
                if not self.query.is_active:
                    return
                epoch = _epoch(str(self.query.status.get("message", "")))
                batch = self._read(self._last_batch + 1 if epoch is None else epoch, 1)
            except SparkscopeError as exc:
                self._on_error(f"tail {self.query.name}: {exc}")
                return
            if batch is not None and batch.total:  # an epoch with no rows prints nothing
                self._last_batch = batch.batch_id
                self._print(batch)

    def _print(self, batch: TailBatch | None) -> None:
        with self._printing:
            if batch is not None and not self._stopped:
                self._on_batch(batch)

    def _count(self, table: Any) -> int:
        return int(table.count())

    def _read(self, batch_id: int, input_rows: int, sink_rows: int | None = None) -> TailBatch | None:
        if self.query.view:
            kept = self.session.client.batch_dataframe(self.query, batch_id)
            total = self._count(kept)
            if total == 0 and not self.empty:
                return None
            return TailBatch(self.query.name, batch_id, fetch(kept, self.limit if total else 0), total, self.query.mode)
        table = self.session.spark.table(self.query.name)
        if self.query.mode == "complete":
            if input_rows == 0 and batch_id > 0 and not self.empty:
                return None  # nothing arrived, so the result did not change
            total = self._count(table)
            return TailBatch(self.query.name, batch_id, fetch(table, self.limit), total, "complete")
        if sink_rows is not None and batch_id == self._batches_read + 1:
            new, self._seen_rows = sink_rows, self._seen_rows + sink_rows
            rows = fetch(table.offset(self._seen_rows - new), min(new, self.limit))
            self._batches_read = batch_id
            return TailBatch(self.query.name, batch_id, rows, new, self.query.mode) if new or self.empty else None
        total = self._count(table)  # a batch not heard of came before: all rows since the last read
        self._batches_read = batch_id
        new = total - self._seen_rows
        if new <= 0:
            return TailBatch(self.query.name, batch_id, fetch(table, 0), 0, self.query.mode) if self.empty else None
        rows = fetch(table.offset(self._seen_rows), min(new, self.limit))
        self._seen_rows = total
        return TailBatch(self.query.name, batch_id, rows, new, self.query.mode)


def follow(session: TailedSession, query: Query, *, batches: int | None = None, timeout: float | None = None,
           limit: int = 20) -> Iterator[TailBatch]:
    """Each batch `query` writes from now on, as it commits (at most `limit` of its rows): until `batches` came,
    `timeout` seconds passed, or the query ended. A batch that could not be read raises. The tail stops when
    the caller stops iterating; the query runs on. It listens from this call on, not from the first next()."""
    arrived: queue.Queue[TailBatch | str] = queue.Queue()
    tail = Tail(session, query, arrived.put, on_error=arrived.put, limit=limit).start()
    deadline = None if timeout is None else time.monotonic() + timeout
    return _batches(tail, arrived, batches, deadline)


def _batches(tail: Tail, arrived: queue.Queue[TailBatch | str], batches: int | None,
             deadline: float | None) -> Iterator[TailBatch]:
    told = 0
    try:
        while batches is None or told < batches:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            try:
                item = arrived.get(timeout=TAIL_LOOK if left is None else min(TAIL_LOOK, left))
            except queue.Empty:
                if not tail.active:  # its end came, and every batch before it was read
                    return
                continue
            if isinstance(item, str):
                raise SparkscopeError(item, "", code="tail_read_failed", data={"name": tail.query.name})
            told += 1
            yield item
    finally:
        tail.stop()
