"""What the monitor knows and hands out, without an RPC: each query's track (state and recent batches), the
events it publishes to subscribers, and what it needs of a session."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..logs import swallowed
from .progress import Progress
from ..error_reading import summarise_error
from ..connection.remote import Target

HISTORY_SIZE = 600  # batches kept per query: ten minutes at a one-second trigger
# ...and never more than the last HISTORY_SECONDS of batches, or HISTORY_BYTES of their JSON: a count alone
# filled only after 100 minutes at a 10 s trigger, so a client's memory grew for that long before it settled
HISTORY_SECONDS = 10 * 60
HISTORY_BYTES = 2 * 2**20
NOTICES_KEPT = 100
RUNS_KEPT = 16  # per query: the runs heard to start, and the ends heard before their run's start


class QueryFailure(Protocol):
    @property
    def short(self) -> str: ...

    @property
    def full(self) -> str: ...


class WatchedQuery(Protocol):
    """What the monitor reads of a query (queries/query.py's Query)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def run_id(self) -> str: ...

    @property
    def progress(self) -> Progress | None: ...

    @property
    def history(self) -> list[Progress]: ...

    @property
    def exception(self) -> QueryFailure | None: ...

    @property
    def final_error(self) -> QueryFailure | None: ...

    def known_state(self) -> str | None: ...


class WatchedSession(Protocol):
    """What the monitor uses of a Session."""

    @property
    def spark(self) -> Any: ...

    @property
    def server(self) -> ServerOfSession: ...


    @property
    def url(self) -> str: ...

    @property
    def client(self) -> SessionPlumbing: ...

    @property
    def streams(self) -> WatchedQueries: ...


class SessionPlumbing(Protocol):
    """What the monitor asks of a Session's plumbing (ss.client)."""

    @property
    def inherits_listener(self) -> bool:
        """It rejoined a session whose client is gone: a listener the server holds for it is that client's."""


class ServerOfSession(Protocol):
    """What the monitor asks of a Session's server (session_server.py)."""

    target: Target


class WatchedQueries(Protocol):
    """What the monitor asks of a Session's queries (ss.streams)."""

    def running(self) -> Sequence[WatchedQuery]: ...

    def known_queries(self) -> Sequence[WatchedQuery]: ...


@dataclass(frozen=True)
class Event:
    """What subscribers receive. kind: started | progress | idle | terminated | notice."""

    kind: str
    query_id: str | None = None
    name: str | None = None
    progress: Progress | None = None
    error: str | None = None
    message: str | None = None
    code: str | None = None  # a notice's situation, for a front end's own hint (e.g. "server_gone")
    run_id: str | None = None  # the run a started or terminated event is of (a restart keeps the id, not the run)
    at: float = field(default_factory=time.time)


@dataclass
class Track:
    """What the monitor knows about one query."""

    id: str
    name: str
    state: str = "active"  # active | stopped | failed
    error: str | None = None
    idle_since: float | None = None
    history: deque = field(default_factory=lambda: deque(maxlen=HISTORY_SIZE))
    updated_at: float = field(default_factory=time.time)
    history_bytes: int = 0  # of the JSON of the batches kept
    run_id: str | None = None  # its current run, once a start said it: a late end of an earlier run is not its end
    runs: deque = field(default_factory=lambda: deque(maxlen=RUNS_KEPT))  # the runs heard to start, oldest first
    early_ends: dict = field(default_factory=dict)  # run id -> error: ends heard before their run's start

    @property
    def latest(self) -> Progress | None:
        return self.history[-1] if self.history else None

    def add(self, progress: Progress) -> bool:
        """Keep `progress` unless this batch is already known; True when it was new."""
        latest = self.latest
        if latest is not None and (progress.batch_id, progress.timestamp) <= (latest.batch_id, latest.timestamp):
            return False
        if len(self.history) == self.history.maxlen:
            self.history_bytes -= len(self.history[0].raw_json)
        self.history.append(progress)
        self.history_bytes += len(progress.raw_json)
        newest = _seconds(progress.timestamp)
        while len(self.history) > 1 and (self.history_bytes > HISTORY_BYTES
                                         or newest - _seconds(self.history[0].timestamp) > HISTORY_SECONDS):
            self.history_bytes -= len(self.history.popleft().raw_json)
        self.updated_at = time.time()
        self.idle_since = None
        return True


def _seconds(timestamp: str) -> float:
    """A batch's trigger time (Spark's ISO text) as epoch seconds; 0 when it cannot be read."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class TrackBook:
    """The tracks of a session's queries, kept from the events heard, and the subscribers told of each."""

    def __init__(self, history_size: int = HISTORY_SIZE):
        self._history_size = history_size
        self._tracks: dict[str, Track] = {}
        self._subscribers: list[Callable[[Event], None]] = []
        self._lock = threading.RLock()
        self.notices: list[str] = []

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback(event)` for every event (on the monitor's thread: keep it quick)."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    # -- reading (no RPC) ---------------------------------------------------------------------------
    def tracks(self) -> list[Track]:
        with self._lock:
            return list(self._tracks.values())

    def track(self, name_or_id: str) -> Track | None:
        with self._lock:
            tracks = list(self._tracks.values())
        for track in reversed(tracks):
            if name_or_id in (track.name, track.id):
                return track
        return None

    def history(self, name_or_id: str) -> list[Progress]:
        track = self.track(name_or_id)
        return list(track.history) if track else []

    # -- events ---------------------------------------------------------------------------------------
    def publish(self, event: Event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            with swallowed("delivering an event"):  # one broken consumer must not starve the others
                callback(event)

    def notice(self, message: str, code: str | None = None) -> None:
        self.notices.append(message)
        del self.notices[:-NOTICES_KEPT]
        self.publish(Event("notice", message=message, code=code))

    def track_for(self, query_id: str, name: str | None) -> Track:
        with self._lock:
            track = self._tracks.get(query_id)
            if track is None:
                track = Track(query_id, name or query_id[:8])
                track.history = deque(maxlen=self._history_size)
                self._tracks[query_id] = track
            elif name:
                track.name = name
            return track

    def on_started(self, query_id: str, name: str | None, run_id: str | None = None) -> None:
        """The start of a run. Its end may have come first: Spark sends a start as the query's thread posts it and an
        end through its listener bus, so a run that fails as it starts can be heard to end before it starts. Such an
        end was held, and is told right after the start."""
        track = self.track_for(query_id, name)
        track.state, track.error = "active", None
        track.run_id = run_id or track.run_id
        if run_id is not None and run_id not in track.runs:
            track.runs.append(run_id)
        self.publish(Event("started", query_id, track.name, run_id=run_id))
        if run_id is not None and run_id in track.early_ends:
            self.on_terminated(query_id, track.early_ends.pop(run_id), run_id)

    def on_progress(self, progress: Progress) -> None:
        track = self.track_for(progress.query_id, progress.name)
        with self._lock:
            track.state = "active"
            is_new = track.add(progress)
        if is_new:
            self.publish(Event("progress", progress.query_id, track.name, progress=progress))

    def on_idle(self, query_id: str) -> None:
        track = self.track_for(query_id, None)
        track.idle_since = track.idle_since or time.time()
        self.publish(Event("idle", query_id, track.name))

    def on_terminated(self, query_id: str, error: str | None, run_id: str | None = None) -> None:
        """The end of a run. A restart from the checkpoint keeps the query's id, so the end of an earlier run, heard
        late (a listener's events lag on a busy server), is not the end of the run that goes on: it is ignored. The
        end of a run not yet heard to start is held for its start (on_started)."""
        track = self.track_for(query_id, None)
        if run_id is not None and track.run_id is not None and run_id != track.run_id:
            if run_id not in track.runs:  # a later run, whose start is still on its way: told when it comes
                track.early_ends[run_id] = error
                while len(track.early_ends) > RUNS_KEPT:
                    del track.early_ends[next(iter(track.early_ends))]
            return
        if track.state != "active" and track.error == error:
            return
        track.state = "failed" if error else "stopped"
        track.error = summarise_error(error) if error else None
        track.updated_at = time.time()
        self.publish(Event("terminated", query_id, track.name, error=track.error, run_id=run_id))
