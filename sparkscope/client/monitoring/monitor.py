"""Live query monitoring: push-based progress from one StreamingQueryListener per session.

pyspark 4 streams listener events over one long-running call. The Monitor turns them into a
bounded history per query (a ring buffer, so memory stays flat over hours) and fans them out to
subscribers (the dashboard, `:tail`, alerts). Reading the history costs no RPC.

pyspark drops every client listener, with only a warning, when that event stream breaks. A
watchdog notices (a local check, no RPC), registers again, back-fills the missed batches from
`recentProgress` and says so once. Where the listener cannot be registered at all, the Monitor
polls instead: `streams.active` plus one `lastProgress` call per active query per interval.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from .._pyspark import ListenerBus
from ..connection.deadlines import answered_within
from ..deadline import within
from ..logs import log, swallowed
from ..errors import SESSION_CLOSED, SparkscopeError
from ..error_causes import cause_at
from ..connection.probe import try_probe
from .progress import Progress
from .events import HISTORY_SIZE, Event, Track, TrackBook, WatchedSession

__all__ = ["Event", "Monitor", "Track"]

STALE_AFTER = 2  # failed polls in a row before the numbers are called stale
CALL_DEADLINE = 5.0  # seconds for the RPCs made on the monitor's behalf (connection/deadlines.py)
# Seconds without any event while queries run before the live stream is checked with one call. An active
# query reports at least every 10 s (a progress, or Spark's idle event: noDataProgressEventInterval).
SILENT_AFTER = 15.0
CHECK_DEADLINE = 3.0  # seconds for the one call that checks a silent stream


class Monitor:
    """Push-based (or, as a fallback, polled) progress for every query of a session."""

    def __init__(self, session: WatchedSession, *, history_size: int = HISTORY_SIZE, use_listener: bool = True,
                 poll_interval: float = 1.0, watchdog_interval: float = 0.5, silent_after: float = SILENT_AFTER,
                 on_event: Callable[[Event], None] | None = None,
                 measure: Callable[[Progress], Progress] | None = None):
        self._book = TrackBook(history_size)
        self._measure = measure  # adds to a progress what Spark's lacks (a real-time query's latency)  # the tracks and subscribers: what the events tell
        if on_event is not None:  # its owner's, told from the start without starting it
            self._book.subscribe(on_event)
        self._closed = False  # closed with its session: a later use does not start it again
        self._session = session
        self._use_listener = use_listener
        self._poll_interval = poll_interval
        self._watchdog_interval = watchdog_interval
        self._starting = threading.Lock()
        self._stop = threading.Event()
        self._listener: Any = None
        self._thread: threading.Thread | None = None
        self.mode = "stopped"  # listener | polling | stopped
        self.reregistered = 0
        self.stale_since: float | None = None  # when polling last got an answer, while it gets none
        self._silent_after = silent_after
        self._heard_at = time.monotonic()  # the live stream's last event (or the last check that it lives)
        self._heard_at_wall = time.time()

    # -- lifecycle --------------------------------------------------------------------------------

    # -- what the events told (its TrackBook's), no RPC ----------------------------------------------
    # the first use of a monitor starts it (one listing of the queries, and the listener's registration)
    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback(event)` for every event (on the monitor's thread: keep it quick)."""
        self._in_use()
        return self._book.subscribe(callback)

    def tracks(self) -> list[Track]:
        """Every query it heard of, with its latest progress."""
        self._in_use()
        return self._book.tracks()

    def track(self, name_or_id: str) -> Track | None:
        self._in_use()
        return self._book.track(name_or_id)

    def history(self, name_or_id: str) -> list[Progress]:
        """The progress of the last batches of one query, oldest first."""
        self._in_use()
        return self._book.history(name_or_id)

    @property
    def notices(self) -> list[str]:
        """What it had to say about itself: fell back to polling, listened again."""
        return self._book.notices

    def _in_use(self) -> None:
        if self.mode == "stopped" and not self._closed:
            self.start()

    def on_started(self, query_id: str, name: str | None, run_id: str | None = None) -> None:
        self._book.on_started(query_id, name, run_id)

    def on_progress(self, progress: Progress) -> None:
        if self._measure is not None:
            with swallowed("measuring a query's latency"):
                progress = self._measure(progress)
        self._book.on_progress(progress)

    def on_idle(self, query_id: str) -> None:
        self._book.on_idle(query_id)

    def on_terminated(self, query_id: str, error: str | None, run_id: str | None = None) -> None:
        self._book.on_terminated(query_id, error, run_id)

    def start(self) -> Monitor:
        with self._starting:  # one start at a time; a second caller finds it started
            if self.mode == "stopped":
                self._start()
        return self

    def _start(self) -> None:
        self._stop.clear()
        with swallowed("listing the session's queries"):  # a stuck server: start with what events bring
            answered_within(CALL_DEADLINE, self._seed, "listing the session's queries")
        # The server keeps one listener per session: one left by a client that died (kill -9) would refuse ours
        registered = self._use_listener and (self._register_again() if self._session.client.inherits_listener
                                             else self._register())
        if registered:
            self.mode = "listener"
            loop = self._watchdog
        else:
            if self._use_listener:
                self._book.notice("Live events are not available from this server; polling every "
                             f"{self._poll_interval:g} s instead")
            self.mode = "polling"
            loop = self._poll_loop
        self._thread = threading.Thread(target=loop, name=f"sparkscope-monitor-{self.mode}", daemon=True)
        self._thread.start()

    def close(self, timeout: float = CALL_DEADLINE) -> bool:
        """Stop listening or polling within `timeout` seconds; False when the server did not answer."""
        self._closed = True
        if self.mode == "stopped":
            return True
        deadline = time.monotonic() + timeout
        self._stop.set()
        if self._thread is not None:  # it wakes at once unless a call of its own is under way
            self._thread.join(timeout=min(1.0, timeout))
        answered = True
        if self._listener is not None:
            listener, streams = self._listener, self._session.spark.streams
            answered = False
            with swallowed("removing the listener"):  # pyspark waits for the event thread with no deadline
                within(max(0.1, deadline - time.monotonic()), lambda: streams.removeListener(listener),
                       "removing the live event listener")
                answered = True
            self._listener = None
        self.mode = "stopped"
        return answered

    # -- the listener -----------------------------------------------------------------------------
    def _register(self) -> bool:
        from pyspark.sql.streaming import StreamingQueryListener

        monitor = self

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                monitor._heard()
                monitor.on_started(str(event.id), event.name, str(event.runId))

            def onQueryProgress(self, event: Any) -> None:
                monitor._heard()
                monitor.on_progress(Progress.from_json(json.loads(event.progress.json)))

            def onQueryIdle(self, event: Any) -> None:
                monitor._heard()
                monitor.on_idle(str(event.id))

            def onQueryTerminated(self, event: Any) -> None:
                monitor._heard()
                monitor.on_terminated(str(event.id), event.exception, str(event.runId))

        listener = _Listener()
        spark = self._session.spark
        tag = f"sparkscope-listener-{id(listener):x}"

        def add() -> None:
            spark.addTag(tag)  # in the thread that makes the call: the tag names its operation
            try:
                spark.streams.addListener(listener)
            finally:
                spark.removeTag(tag)

        try:  # pyspark swallows a failure here and only warns; a stuck server never answers at all
            within(CALL_DEADLINE, add, "adding the live event listener")
        except Exception:
            log.debug("could not add the live event listener", exc_info=True)
            # pyspark holds its listener bus's lock while it waits for the server's answer, and every query
            # start waits on that lock (it posts onQueryStarted): the call is interrupted, so that it lets go
            with swallowed("interrupting the unanswered listener registration"):
                within(CALL_DEADLINE, lambda: spark.interruptTag(tag), "interrupting the listener registration")
            return False
        if not self._listener_healthy(listener):
            return False
        self._listener = listener
        return True

    def _register_again(self) -> bool:
        """Register after a break, once the server has been asked to drop the old stream. After dropped
        connections the server may keep the old stream's cursor and never answer a new registration
        (INVALID_CURSOR.DISCONNECTED, measured with pyspark 4.3.0); the caller then polls."""
        with swallowed("ending the server's old listener stream"):
            within(CHECK_DEADLINE, lambda: ListenerBus(self._session.spark).end_server_stream(self._session.spark),
                   "ending the old live event stream")
        return self._register()

    def _listener_healthy(self, listener: Any = None) -> bool:
        """A local check of pyspark's listener bus: our listener is on it and its event thread lives."""
        return ListenerBus(self._session.spark).healthy(listener or self._listener)

    def _heard(self) -> None:
        self._heard_at, self._heard_at_wall = time.monotonic(), time.time()
        if self.stale_since is not None:
            self.stale_since = None
            self._book.notice("The server answers again; the numbers are live")

    @property
    def silent(self) -> bool:
        """Listening, queries run, and no event arrived for a while: the numbers may not be current."""
        return (self.mode == "listener" and time.monotonic() - self._heard_at > self._silent_after
                and any(track.state == "active" for track in self._book.tracks()))

    def _watchdog(self) -> None:
        while not self._stop.wait(self._watchdog_interval):
            if self._listener is None:
                continue
            try:
                healthy = self._listener_healthy()
            except SparkscopeError as error:
                if error.code == SESSION_CLOSED:  # closed under it (its close ran out of time): nothing to watch
                    return
                raise
            if healthy:
                if self.silent:
                    self._check_silent_stream()
                continue
            if not self._listen_again("broke"):
                return

    def _check_silent_stream(self) -> None:
        """No event for a while although queries run: one call tells a quiet stream from a dead one
        (batches the stream never delivered) and from a server that does not answer at all."""
        try:
            missed = answered_within(CHECK_DEADLINE, self._missed_batches, "checking the queries' progress")
        except Exception:
            log.debug("the silent-stream check got no answer", exc_info=True)
            if self.stale_since is None:
                self.stale_since = self._heard_at_wall
                self._book.notice(f"The server is not answering; the numbers shown are from "
                             f"{time.strftime('%H:%M:%S', time.localtime(self._heard_at_wall))}, not live",
                             code="server_silent")
            self._heard_at = time.monotonic()  # check again after another quiet spell, not at once
            return
        self._heard()
        if missed:
            self._listen_again("went silent")

    def _missed_batches(self) -> bool:
        """Whether a running query has a newer batch than the stream delivered (one RPC per query)."""
        for query in self._session.streams.running():
            last = query.progress
            track = self._book.track(query.id)
            known = track.latest if track is not None else None
            if last is not None and (known is None or last.batch_id > known.batch_id):
                return True
        return False

    def _listen_again(self, what: str) -> bool:
        """Open a new event stream in place of one that broke or went silent, and back-fill what it
        missed. False when that failed (the monitor then polls)."""
        bus = ListenerBus(self._session.spark)  # forget the dead stream, so adding registers anew
        others = bus.detach_all(self._listener, timeout=CALL_DEADLINE)
        if others is not None and self._register_again():
            bus.reattach(others)
            self.reregistered += 1
            filled = self._backfill()
            self._heard()
            if self.reregistered == 1 or what != "broke":
                self._book.notice(f"The live event stream {what}; listening again (back-filled {filled} "
                             f"batch{'es' if filled != 1 else ''} from recent progress)")
            return True
        lost = _listeners_taken_off(others)
        if try_probe(self._session.server.target, timeout=2) is None:
            self.stale_since = time.time()
            how = "ran out of memory and exited" if cause_at(self._session.server.target.port) is not None else "went away"
            self._book.notice(f"The server at {self._session.url} {how}, and its queries stopped with it{lost}",
                         code="server_gone")
        else:
            self._book.notice(f"The live event stream {what} and could not be re-opened; polling instead{lost}")
        self.mode = "polling"
        self._poll_loop()
        return False

    # -- seeding, back-filling and polling ---------------------------------------------------------------
    def _seed(self) -> None:
        """Known queries and their recent history, before events start arriving."""
        for query in self._session.streams.running():
            track = self._book.track_for(query.id, query.name)
            with swallowed(f"reading the recent progress of {query.name}"):
                for progress in query.history:
                    track.add(progress)
        for query in self._session.streams.known_queries():
            ended = query.known_state()
            if ended is not None:
                track = self._book.track_for(query.id, query.name)
                track.state = ended
                track.error = query.final_error.short if query.final_error else None

    def _backfill(self) -> int:
        filled = 0
        for query in self._session.streams.running():
            track = self._book.track_for(query.id, query.name)
            with swallowed(f"reading the recent progress of {query.name}"):
                for progress in query.history:
                    if track.add(progress):
                        filled += 1
                        self._book.publish(Event("progress", query.id, track.name, progress=progress))
        return filled

    def poll_once(self) -> None:
        """One polling round: streams.active, then lastProgress per active query."""
        spark = self._session.spark
        active = {handle.id: handle for handle in spark.streams.active}
        for query_id, handle in active.items():
            track = self._book.track_for(query_id, handle.name)
            run_id = str(handle.runId)
            if track.state != "active" or track.run_id != run_id:  # new to the monitor, started, or restarted since
                self._book.on_started(query_id, handle.name, run_id)
            last = handle.lastProgress
            if last is not None:
                self._book.on_progress(Progress.from_json(json.loads(last.json)))
        for track in self._book.tracks():
            if track.state == "active" and track.id not in active:
                query = next((q for q in self._session.streams.known_queries() if q.id == track.id), None)
                if query is not None and query.run_id not in track.runs:  # a later run came and went between two
                    self._book.on_started(track.id, query.name, query.run_id)  # polls: it ran, then ended
                # the error is the ended run's own: a Query of another run of this id (one started outside this
                # process, which polling cannot read the end of) does not lend it its own
                ended = query if query is not None and query.run_id == track.run_id else None
                failure = ended.exception if ended is not None else None
                self._book.on_terminated(track.id, failure.full if failure else None, track.run_id)

    def _poll_loop(self) -> None:
        """Poll until closed. A server that stops answering is said once, with the time of the numbers
        still shown; they are never passed off as live (`stale_since`)."""
        failures = 0
        answered_at = time.time()
        while not self._stop.is_set():
            try:
                answered_within(CALL_DEADLINE, self.poll_once, "polling the queries' progress")
            except Exception as exc:
                if isinstance(exc, SparkscopeError) and exc.code == SESSION_CLOSED:  # closed under it: nothing to poll
                    return
                failures += 1
                log.debug("polling failed (%d in a row)", failures, exc_info=True)
                if failures == STALE_AFTER and self.stale_since is None:
                    self.stale_since = answered_at
                    reason = exc.message if isinstance(exc, SparkscopeError) else type(exc).__name__
                    self._book.notice(f"The server is not answering ({reason}); the numbers shown are from "
                                 f"{time.strftime('%H:%M:%S', time.localtime(answered_at))}, not live")
            else:
                failures, answered_at = 0, time.time()
                if self.stale_since is not None:
                    self.stale_since = None
                    self._book.notice("The server answers again; the numbers are live")
            self._stop.wait(self._poll_interval)


def _listeners_taken_off(taken: list[Any] | None) -> str:
    """What a notice adds when the listeners the user added (spark.streams.addListener) were taken off a dead event
    stream and could not go onto a new one: pyspark's bus no longer holds them, as pyspark's own bus drops every
    listener, and warns, when its stream fails. Another monitor's listener is not the user's."""
    users = [listener for listener in taken or [] if type(listener).__module__ != __name__]
    if not users:
        return ""
    names = ", ".join(type(listener).__name__ for listener in users)
    if len(users) == 1:
        return f"; your listener {names} was removed: add it again with spark.streams.addListener"
    return f"; your {len(users)} listeners ({names}) were removed: add them again with spark.streams.addListener"
