"""Which queries a Session knows: the ones it started, the ones it finds running, their progress, and what the
catalog says of them."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..catalog import durable
from ..catalog.records import ACTIVE, FAILED, STOPPED, Record
from ..connection.deadlines import answered_within
from ..deprecation import renamed_arguments
from ..errors import QueryNotFound, session_closed
from ..error_reading import call, translated
from ..logs import log, swallowed
from . import bounded_sink
from .planning import BOUNDED, FILE_SINKS, parse_keep, parse_trigger
from ..monitoring.progress import Latency, Progress
from .query import Query, QueryInfo

if TYPE_CHECKING:  # pragma: no cover
    from ..monitoring.events import Track
    from ..monitoring.monitor import Monitor
    from .owner import OwningSession

CALL_DEADLINE = 5.0  # seconds for a call made on the monitor's thread
BATCH_RECORD_EVERY = 5.0  # seconds between catalog writes of a query's last batch id
T = TypeVar("T")
_SINK_NAMES = (("MemorySink", "memory"), ("ForeachBatchSink", "foreach_batch"), ("ForeachWriterTable", "foreach"),
               ("ConsoleTable", "console"), ("FileSink", "file"))


def _while_open(method: Callable[..., T]) -> Callable[..., T]:
    """A verb that asks the server: once the session is closed, it says so (as the Session's own methods do) instead
    of failing somewhere in pyspark."""
    @functools.wraps(method)
    def guarded(self: QueryManager, *args: Any, **kwargs: Any) -> T:
        if self._closed():
            raise session_closed()
        return method(self, *args, **kwargs)

    return guarded


class QueryManager:
    """`ss.streams`: the session's streaming queries, as `spark.streams` (pyspark's StreamingQueryManager) holds a
    SparkSession's: finding one (get), listing them, their progress and monitor, stopping, waiting for an end, and
    what the catalog says of them (lost, forgotten). The one home of these verbs: the Session copies none of them.
    It owns the queries, their lock and the monitor that listens to them; the Session's starter and reader ask it
    through its methods."""

    def __init__(self, session: OwningSession,
                 look_into: Callable[[str | None], contextlib.AbstractContextManager[Any]],
                 ring_latency: Callable[[str, int | None], Latency | None] | None = None,
                 closed: Callable[[], bool] = lambda: False) -> None:
        self._s = session  # its public face: spark, catalog, url, server (and what the catalog functions need)
        self._look_into = look_into  # another session of the server, joined for a look (None when it is gone)
        self._ring_latency = ring_latency  # a ring's latency of a batch (BoundedSink.latency)
        self._queries: dict[str, Query] = {}  # every query this process knows in the session, by id
        self._started_here: set[str] = set()  # ids of the queries this process started (not found)
        self._lock = threading.RLock()
        self._monitor: Monitor | None = None
        self._batch_recorded: dict[str, float] = {}  # when each query's last batch was written to the catalog
        self._closed = closed  # the session's close() has finished: the verbs that ask the server say so

    def add(self, query: Query, *, started_here: bool) -> None:
        """Know `query` from now on; `started_here`: this process started it (it did not find it running)."""
        query.owner = self._s
        query.measure = self._measured
        with self._lock:
            self._queries[query.id] = query
            if started_here:
                self._started_here.add(query.id)

    def track(self, query_id: str) -> Track | None:
        """What the monitor heard of a query, without an RPC; None when no monitor listens (or it heard nothing)."""
        with self._lock:
            monitor = self._monitor
        return monitor.track(query_id) if monitor is not None else None

    def close_monitor(self, timeout: float) -> bool:
        """Stop listening; False when the server did not answer within `timeout` (nothing more should be asked)."""
        with self._lock:
            monitor = self._monitor
        return monitor.close(timeout=timeout) if monitor is not None else True

    # -- looking up -----------------------------------------------------------------------------
    def adopt_active(self) -> list[Query]:
        """Register queries running in this session that sparkscope did not start (user code, reattach)."""
        active = call(lambda: self._s.spark.streams.active)
        with self._lock:
            for handle in active:
                known = self._queries.get(handle.id)
                if known is None or known.run_id != handle.runId:  # new, or restarted from its checkpoint
                    query = self._adopted(handle)
                    query.on_end = self.ended
                    query.owner = self._s
                    query.measure = self._measured
                    query.files_here = self._s.server.target.on_this_machine
                    self._queries[handle.id] = query
            active_ids = {h.id for h in active}
        return [q for q in self._queries.values() if q.id in active_ids]

    def _adopted(self, handle: Any) -> Query:
        """A Query for a running handle this process did not start: what the catalog recorded of it
        (sink, mode, trigger, checkpoint, path) when it is there."""
        name = handle.name or handle.id[:8]
        record = None
        with swallowed("reading the catalog"):
            record = self._s.catalog.get(self._s.url, name)
        if record is None or record.query_id != handle.id:
            sink, ring = _sink_of(handle)
            return Query(handle, name=name, sink=sink, view=ring)
        return Query(handle, name=name, sink=record.sink, mode=record.mode, trigger=parse_trigger(record.trigger),
                     checkpoint=record.checkpoint, path=record.path, table=record.table_name,
                     fmt=record.sink if record.sink in FILE_SINKS else None,
                     keep=parse_keep(record.keep) if record.sink == BOUNDED else None, view=record.view)

    def find_active_by_name(self, name: str, *, ignore_case: bool = False) -> Query | None:
        """The running query named `name` (one RPC); with `ignore_case`, one whose name differs only in case when
        none is named exactly so."""
        active = self.adopt_active()
        exact = next((query for query in active if query.name == name), None)
        if exact is not None or not ignore_case:
            return exact
        return next((query for query in active if query.name.lower() == name.lower()), None)

    @_while_open
    def get(self, name_or_id: str | Query) -> Query:
        """A query of this session by name, id, or unique id prefix (active ones first)."""
        if isinstance(name_or_id, Query):
            return name_or_id
        key = str(name_or_id)
        active = self.adopt_active()
        with self._lock:
            everything = active + [q for q in reversed(list(self._queries.values())) if q not in active]
        for query in everything:
            if query.name == key or query.id == key:
                return query
        matches = [q for q in everything if len(key) >= 4 and q.id.startswith(key)]
        if len(matches) == 1:
            return matches[0]
        names = ", ".join(sorted({q.name for q in everything})) or "none"
        if len(matches) > 1:
            raise QueryNotFound(f"'{key}' matches {len(matches)} queries", "Give more of the id, or the name")
        raise QueryNotFound(f"No query named '{key}'", f"Queries in this session: {names}")

    def known_by_name(self, name: str) -> Query | None:
        """The newest query of this name this process knows (started here, or seen running), without an RPC; None
        when it knows none, and the server must be asked (query())."""
        with self._lock:
            return next((q for q in reversed(list(self._queries.values())) if q.name == name), None)

    def live_monitor(self) -> Monitor | None:
        """The monitor, while its event stream is heard from; None means: ask the server."""
        monitor = self._monitor
        if monitor is None or monitor.mode != "listener" or monitor.silent:
            return None
        return monitor

    @_while_open
    @renamed_arguments(all="catalogued")
    def queries(self, catalogued: bool = False) -> list[QueryInfo]:
        """Every query of this session: active ones and those that stopped or failed (until reset).

        One RPC lists the active queries; their last progress comes from the monitor when it is
        listening (no RPC), otherwise one lastProgress call each. With `catalogued`, the catalog's other
        queries of this server follow: stopped, failed and lost ones, from earlier sessions too.
        """
        active = {q.id for q in self.adopt_active()}
        with self._lock:
            known = list(self._queries.values())
        monitor = self.live_monitor()
        infos = []
        for query in known:
            track = monitor.track(query.id) if monitor and query.id in active else None
            infos.append(query.info(active=query.id in active, latest=track.latest if track else None))
        if catalogued:
            shown = {info.name for info in infos}
            for record in self.catalog_records():
                if record.name not in shown:
                    infos.append(QueryInfo(name=record.name, id=record.query_id or "", state=record.state,
                                           sink=record.sink, mode=record.mode, trigger=record.trigger,
                                           last_batch=record.last_batch, input_rows_per_second=0.0,
                                           processed_rows_per_second=0.0, error=record.error or record.reason,
                                           checkpoint=record.checkpoint))
        return infos

    @_while_open
    def running(self) -> list[Query]:
        """This session's active queries (one RPC), including ones sparkscope did not start."""
        return self.adopt_active()

    @_while_open
    def stop(self, name_or_query: str | Query) -> None:
        """Stop one query: of this session (by name, id or Query), or, by name, one the catalog says runs in another
        session of this server (where a REPL or script of yours left it running)."""
        try:
            query = self.get(name_or_query)
        except QueryNotFound:
            if isinstance(name_or_query, str) and self.stop_elsewhere(name_or_query) is not None:
                return
            raise
        query.stop()

    def started_here(self, query: Query) -> bool:
        """Whether this process started `query` (not found it: reattached, or another client's)."""
        return query.id in self._started_here

    def known_queries(self) -> list[Query]:
        """The queries this process knows of in this session, without an RPC (for completion, alerts)."""
        with self._lock:
            return list(self._queries.values())

    @_while_open
    def recent_progress(self, query: Query, last: int | None = None) -> list[Progress]:
        """The progress of the query's last `last` batches (or of its latest one): from the monitor when
        it listens (no RPC), otherwise one call to the server."""
        monitor = self.live_monitor()
        history = monitor.history(query.id) if monitor is not None else []
        if not history:
            history = query.history if last else [p for p in [query.progress] if p is not None]
        return history[-last:] if last else history[-1:]

    def active_count(self) -> int:
        """How many of this session's queries run, as far as this process knows, without an RPC: the
        monitor's view when it listens (a failed query counts as ended at once), else what we saw."""
        monitor = self._monitor
        if monitor is not None and monitor.mode != "stopped":
            return sum(1 for track in monitor.tracks() if track.state == "active")
        with self._lock:
            return sum(1 for query in self._queries.values() if query.known_state() is None)

    # -- managing -------------------------------------------------------------------------------
    @_while_open
    def stop_all(self, stopped: list[str] | None = None) -> list[str]:
        """Stop every active query of this session; their names, each added to `stopped` as it stops (what
        a caller that gave up waiting can still tell)."""
        stopped = [] if stopped is None else stopped
        for query in self.adopt_active():
            query.stop()
            stopped.append(query.name)
        return stopped

    @_while_open
    def await_any_termination(self, timeout: float | None = None) -> bool:
        """Wait until one of this session's queries ends (True), or `timeout` seconds pass (False)."""
        with translated():
            if timeout is None:
                self._s.spark.streams.awaitAnyTermination()
                return True
            return bool(self._s.spark.streams.awaitAnyTermination(int(max(1, round(timeout)))))

    @_while_open
    def reset_terminated(self) -> int:
        """Forget stopped and failed queries; returns how many were forgotten."""
        call(self._s.spark.streams.resetTerminated)
        active_ids = {q.id for q in self.adopt_active()}
        with self._lock:
            gone = [qid for qid in self._queries if qid not in active_ids]
            for qid in gone:
                del self._queries[qid]
        return len(gone)

    @property
    @_while_open
    def monitor(self) -> Monitor:
        """Live progress of every query of this session, pushed by a listener that starts at the monitor's first use
        (not under this book's lock: its first look at the running queries needs it)."""
        from ..monitoring.monitor import Monitor

        with self._lock:
            if self._monitor is None:
                self._monitor = Monitor(self._s, on_event=self._on_monitor_event, measure=self._measured)
            return self._monitor

    def _measured(self, progress: Progress) -> Progress:
        """A real-time query's progress with its latency, which its ring measured (a micro-batch query's progress
        has it already, in its sink's metrics): one call, on the monitor's thread, per batch of such a query."""
        ring_latency = self._ring_latency
        if progress.latency is not None or ring_latency is None:
            return progress
        with self._lock:
            query = self._queries.get(progress.query_id)
        view = query.view if query is not None and query.trigger.kind == "realtime" else None
        if query is None or view is None:
            return progress
        latency = answered_within(CALL_DEADLINE, lambda: ring_latency(view, progress.batch_id),
                                  f"the latency of {query.name}")
        return dataclasses.replace(progress, latency=latency) if latency is not None else progress

    def ended(self, query: Query, state: str, error: str | None) -> None:
        with swallowed(f"recording the end of {query.name} in the catalog"):
            self._s.catalog.record_end(self._s.url, query.name, state, error, query_id=query.id)
            last = query.progress
            if last is not None:
                self._s.catalog.record_batch(self._s.url, query.id, last.batch_id)

    def _on_monitor_event(self, event: Any) -> None:
        """Keep the catalog's last batch (at most every few seconds per query) and endings current."""
        if event.kind == "progress" and event.progress is not None and event.query_id:
            now = time.monotonic()
            if now - self._batch_recorded.get(event.query_id, 0.0) >= BATCH_RECORD_EVERY:
                self._batch_recorded[event.query_id] = now
                with swallowed("recording a batch in the catalog"):
                    self._s.catalog.record_batch(self._s.url, event.query_id, event.progress.batch_id)
        elif event.kind == "terminated" and event.query_id:
            with self._lock:
                query = self._queries.get(event.query_id)
            # the end of an earlier run of this query id, heard after a restart (same id, new run): not this run's
            if query is not None and (event.run_id is None or event.run_id == query.run_id):
                with swallowed("recording the end of a query in the catalog"):
                    self._s.catalog.record_end(self._s.url, query.name, FAILED if event.error else STOPPED,
                                            event.error.splitlines()[0][:300] if event.error else None,
                                            query_id=query.id)

    # -- the catalog: what was lost, and forgetting -----------------------------------------------
    @_while_open
    def forget(self, name: str, *, delete_checkpoint: bool = False) -> Record:
        """Remove a stopped, failed or lost query from the catalog; its checkpoint stays unless asked."""
        return durable.forget(self._s, name, delete_checkpoint=delete_checkpoint)

    def lost_queries(self) -> list[Record]:
        """Catalogued queries recorded as running that no longer run because their session is gone from
        the server (restarted, or timed out): marked lost, and returned. Each other session they ran in costs a
        look into it: about five RPCs (the probe, its marker, its active queries twice, its release)."""
        return durable.find_lost(self._s)

    def running_in(self, other_session: str) -> set[str] | None:
        """The ids of the queries running in another session of this server; None when it is gone."""
        with self._look_into(other_session) as other:
            return None if other is None else {q.id for q in other.streams.running()}

    def stop_elsewhere(self, name: str) -> Record | None:
        """Stop the query `name` where the catalog says it runs: another session of this server, where this
        client left it running (spark.stop() answered "leave it", or a REPL or script that ended so). Its
        record, once stopped; None when the catalog knows of no such query running in another session."""
        record = self._s.catalog.get(self._s.url, name)
        if record is None or record.state != ACTIVE or record.session_id in (None, self._s.session_id):
            return None
        with self._look_into(record.session_id) as other:
            query = next((q for q in other.streams.running() if q.id == record.query_id), None) if other else None
            if query is not None:
                query.stop()  # recorded as stopped in the catalog, as any stop
                return record
        self.lost_queries()  # it no longer runs there: the catalog says so from now on
        return None

    def catalog_records(self) -> list[Record]:
        """This server's catalog, after marking the queries that are gone from the server as lost."""
        self.lost_queries()
        return self._s.catalog.records(self._s.url)


def _sink_of(handle: Any) -> tuple[str, str | None]:
    """The sink of a running query as its progress names it, and the bounded sink's ring (else None)."""
    try:
        last = handle.lastProgress
    except Exception:
        log.debug("could not read the sink of query %s", handle.id, exc_info=True)
        return "unknown", None
    if last is None:
        return "unknown", None
    description = str(last.sink.description)
    ring = bounded_sink.ring_of(description)
    if ring is not None:
        return BOUNDED, ring
    for marker, sink in _SINK_NAMES:
        if marker in description:
            return sink, None
    return description.split("[")[0] or "unknown", None
