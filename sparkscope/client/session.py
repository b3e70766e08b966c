"""`sparkscope.connect()` and the Session: a pyspark Connect SparkSession plus streaming helpers.

The Session is built in layers, one concern each: its shared state (session_base), the queries it knows
(query_tracking), reading their sinks (sink_reading), and starting them (query_starting). This file opens,
checks and closes it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ._pyspark import (hold_process_settings, keep_session_on_close, make_active, release_process_settings,
                       session_builder, session_id)
from .catalog.records import ACTIVE, Catalog, Record
from .deadline import within
from .logs import log, swallowed
from .errors import (AuthenticationFailed, ConnectionFailed, DeadlineExceeded, ServerUnreachable,
                     SparkscopeError, call, explain_unreachable, session_closed, translate,
                     translated)
from .connection.probe import probe
from .queries.starting import QueryStarting
from .connection.remote import Target
from .session_base import KEEPALIVE_SECONDS, SESSION_MARKER

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.connect.session import SparkSession

RETRIES = 3  # after 0.2, 0.4 and 0.8 s
CLOSE_DEADLINE = 10.0  # seconds for close() in all: listener, stopping queries, releasing
CHECK_DEADLINE = 5.0
WARM_UP_WAIT = 30.0  # a warm-up that takes longer is not waited for


def warm_up_query(spark: Any) -> None:
    """A query through the paths most queries take: code generation, a shuffle, an aggregation."""
    spark.range(8).selectExpr("id % 2 AS k").groupBy("k").count().collect()


def retry_policies() -> list[Any]:
    """pyspark's default policy retries an unavailable server for about 20 minutes; an interactive
    tool gives up after 1.4 s. It must still be pyspark's DefaultPolicy (the base RetryPolicy
    retries nothing): a call that meets a connection the network just cut fails with UNAVAILABLE
    ("Stream removed") and succeeds when retried on a new one."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    return [DefaultPolicy(max_retries=RETRIES, initial_backoff=200, max_backoff=1000, backoff_multiplier=2.0,
                          jitter=0, max_server_retry_delay=1000)]


class ServerHere(Protocol):
    """The embedded server of this machine, as a Session looks at it (sparkscope.server.connecting makes one).
    Each answer is about the server on `port` only, and only reads: none starts, stops or deletes anything."""

    def ui(self, port: int) -> str | None: ...

    def restarted_under(self, port: int, token: str | None) -> bool: ...

    def busy_tasks(self, port: int, window: float) -> list[float] | None: ...

    def out_of_memory_exit(self) -> SparkscopeError | None: ...


# what a closed Session still answers: who it was, and the client-side catalog
USABLE_AFTER_CLOSE = frozenset({"close", "url", "session_id", "target", "server_version", "server_home", "catalog",
                                "started_here", "known_queries", "user"})


class Session(QueryStarting):
    """A connection to one Spark Connect session. `spark` is the real pyspark SparkSession."""

    _held = False  # opened for its user (not only looked into): the catalog names this process as its holder
    _handed_back = False  # close() has finished: its public methods now say so instead of failing in pyspark

    def __getattribute__(self, name: str) -> Any:
        if name[:1] != "_" and name not in USABLE_AFTER_CLOSE and object.__getattribute__(self, "_handed_back"):
            raise session_closed()
        return object.__getattribute__(self, name)

    def __init__(self, spark: SparkSession, target: Target, server_version: str,
                 keepalive: float = KEEPALIVE_SECONDS, server_home: Path | None = None,
                 here: ServerHere | None = None):
        super().__init__(spark, target, server_version, server_home)
        self.here = here  # the embedded server of this machine, when this session may be on it
        self._warming: threading.Thread | None = None
        if keepalive > 0:
            threading.Thread(target=self._keepalive, args=(keepalive,), name="sparkscope-keepalive",
                             daemon=True).start()

    @classmethod
    def open(cls, target: Target, *, timeout: float = 5.0, keepalive: float = KEEPALIVE_SECONDS,
             activate: bool = True, server_home: Path | None = None, here: ServerHere | None = None) -> Session:
        """Open (or, with target.session_id, rejoin) a session. `activate`: make it the session pyspark's
        own helpers use (DDL parsing); off for sessions only looked into."""
        version = probe(target, timeout=timeout)
        hold_process_settings()  # released when it closes
        try:
            with translated():
                spark = session_builder(target.url(with_token=True), target.root_certificates()).create()
        except BaseException:
            release_process_settings()
            raise
        spark.client.set_retry_policies(retry_policies())
        session = cls(spark, target.with_session(session_id(spark)), version, keepalive, server_home, here)
        try:
            if target.session_id and not session._known_to_server():
                session.close(stop_queries=True)  # the server made a new, empty session: release it
                raise ConnectionFailed(
                    f"The server has no session {target.session_id} (it was closed, timed out, or the server "
                    "restarted)", "Connect without session_id to open a new session", code="session_unknown",
                    data={"session_id": str(target.session_id)})
            if target.session_id:  # rejoined (it has our marker): its running queries are this session's
                session._adopt_active()
            else:
                with contextlib.suppress(SparkscopeError):  # a server that refuses unknown keys still works
                    call(spark.conf.set, SESSION_MARKER, str(int(time.time())))
            if activate or not target.session_id:  # a session only looked into is not recorded again
                with swallowed("recording the session in the catalog"):
                    session.catalog.record_session(session.url, session.session_id, held=activate)
            session._held = activate
            if activate:
                make_active(spark)
            if here is not None and (target.source == "local" or target.token_source == "state"):  # embedded
                session._stop_explaining = explain_unreachable(here.out_of_memory_exit)
        except BaseException:
            session._stop_keepalive.set()
            if not session._closed:  # never handed out: what it holds of the process goes back
                session._closed = True
                release_process_settings()
            raise
        return session

    @classmethod
    def reattach(cls, target: Target, *, timeout: float = 5.0, server_home: Path | None = None,
                 here: ServerHere | None = None) -> Session:
        """Rejoin the most recent session this client opened on the server whose queries still run
        (after a crash of the REPL or a script: no id to copy)."""
        server = target.with_session(None)
        catalog = Catalog.in_home(server_home)
        in_use: list[tuple[str, int]] = []
        for known in catalog.last_sessions(server.display):
            holder = catalog.holder(server.display, known)
            if holder is not None:  # another REPL or script of this machine works in it: not a crashed one's
                in_use.append((known, holder))
                continue
            try:
                session = cls.open(server.with_session(known), timeout=timeout, activate=False,
                                   server_home=server_home, here=here)
            except ConnectionFailed as exc:
                if isinstance(exc, (ServerUnreachable, DeadlineExceeded, AuthenticationFailed)):
                    raise
                continue  # that session is gone from the server
            if session.running():
                make_active(session.spark)
                session._held = True
                with swallowed("recording the session in the catalog"):
                    catalog.record_session(server.display, known, held=True)
                return session
            session.close(stop_queries=False)
        if in_use:
            known, holder = in_use[0]
            raise ConnectionFailed(f"No session on {server.display} was left by this client: session {known} is in "
                                   f"use by another sparkscope (pid {holder})", f"Join it anyway by its session id "
                                   f"({known}): its queries are then both of yours", code="session_in_use",
                                   data={"session_id": known, "pid": str(holder)})
        raise ConnectionFailed(f"No session of this client on {server.display} has running queries",
                               "Connect without reattaching to open a new session", code="nothing_to_reattach")

    def running_in(self, other_session: str) -> set[str] | None:
        """The ids of the queries running in another session of this server; None when it is gone."""
        with self._looking_into(other_session) as other:
            return None if other is None else {q.id for q in other.running()}

    def stop_elsewhere(self, name: str) -> Record | None:
        """Stop the query `name` where the catalog says it runs: another session of this server, where this
        client left it running (spark.stop() answered "leave it", or a REPL or script that ended so). Its
        record, once stopped; None when the catalog knows of no such query running in another session."""
        record = self.catalog.get(self.url, name)
        if record is None or record.state != ACTIVE or record.session_id in (None, self.session_id):
            return None
        with self._looking_into(record.session_id) as other:
            query = next((q for q in other.running() if q.id == record.query_id), None) if other else None
            if query is not None:
                query.stop()  # recorded as stopped in the catalog, as any stop
                return record
        self.lost_queries()  # it no longer runs there: the catalog says so from now on
        return None

    @contextlib.contextmanager
    def _looking_into(self, other_session: str | None) -> Iterator[Session | None]:
        """Another session of this server, joined only for a look (None when it is gone), and left running."""
        if not other_session:
            yield None
            return
        try:
            other = Session.open(self.target.with_session(other_session), keepalive=0, activate=False,
                                 server_home=self.server_home, here=self.here)
        except ConnectionFailed as exc:
            if isinstance(exc, (ServerUnreachable, DeadlineExceeded)):
                raise
            yield None
            return
        try:
            yield other
        finally:
            other.close(stop_queries=False, drop_views=False)  # the rows its queries keep are its holder's

    def spark_ui(self) -> str | None:
        """Where the Spark UI is and who can read it, for the embedded server (None for another one)."""
        if self.here is None or not self.target.on_this_machine or self.target.port is None:
            return None
        return self.here.ui(self.target.port)

    def busy_tasks(self, window: float = 1.0) -> list[float] | None:
        """The cores each computing task of the embedded server uses now, sampled over `window` seconds (tasks of
        every session, streams' too); None for another server, whose threads this machine cannot see."""
        if self.here is None or not self.target.on_this_machine or self.target.port is None:
            return None
        return self.here.busy_tasks(self.target.port, window)

    def explain_restart(self, error: SparkscopeError) -> SparkscopeError:
        """`error`; or, when the embedded server was stopped and started again under this session (its state
        dir holds the new server's token), the error that says so. The new server refuses the old token, and
        until the channel's reconnect backoff ends the call may not even reach it: either way the user gave
        no token, and this session and its queries are gone from the new server."""
        if not isinstance(error, (AuthenticationFailed, ServerUnreachable)) or self.target.token_source != "state":
            return error
        if self.here is None or self.target.port is None or not self.here.restarted_under(self.target.port,
                                                                                          self.target.token):
            return error
        return ConnectionFailed("The local server was restarted (it has a new token), so this session and its "
                                "queries are gone from it", "Open a new session with sparkscope.connect()",
                                code="server_restarted")

    def check(self) -> None:
        """One cheap RPC with a deadline: raises ConnectionFailed when the server is gone, frozen, or
        no longer knows this session (after a restart it would silently hand out a new, empty one)."""
        try:
            marker = within(CHECK_DEADLINE, lambda: self.spark.conf.get(SESSION_MARKER, None), "checking the session")
        except Exception as exc:
            error = translate(exc)
            if isinstance(error, (ServerUnreachable, DeadlineExceeded)):
                raise error from exc  # the server is gone or frozen, not just this session
            marker = None  # the server answered, but not for this session (changed, closed, unknown)
        if not marker:
            raise ConnectionFailed(f"The server no longer knows session {self.session_id} (it was closed, timed "
                                   "out, or the server restarted); its queries are gone from it",
                                   "Open a new one with sparkscope.connect()", code="session_lost",
                                   data={"session_id": self.session_id})

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm_up(self) -> None:
        """One small aggregation, in the background. A server that just started loads and compiles its query
        path on its first query (1.5 s on 2 cores); done now, the user's first query finds it ready."""
        def run() -> None:
            with swallowed("warming up the server"):
                warm_up_query(self.spark)

        self._warming = threading.Thread(target=run, name="sparkscope-warm-up", daemon=True)
        self._warming.start()

    def warmed(self, timeout: float = WARM_UP_WAIT) -> None:
        """Wait for the warm-up, if one runs: a query sent meanwhile would compete with it for the same cold
        code paths (measured: 2.5 s instead of 1.7 s for both together)."""
        if self._warming is not None:
            self._warming.join(timeout)

    # -- closing --------------------------------------------------------------------------------
    def _keepalive(self, every: float) -> None:
        while not self._stop_keepalive.wait(every):
            with swallowed("keeping the session alive"):
                self.spark.version  # noqa: B018 - one cheap RPC keeps the server session alive

    def close(self, stop_queries: bool = True, drop_views: bool = True) -> None:
        """Stop this session's queries and release it; with stop_queries=False leave both running.
        `drop_views`: drop the rows its bounded-sink queries kept (off for a session only looked into).

        Within CLOSE_DEADLINE seconds in all, also on a frozen network: once a step gets no answer,
        the server is not answering, and the remaining calls are abandoned instead of each waiting."""
        if self._closed:
            return
        self._closed = True
        try:
            self._release(stop_queries, drop_views)
        finally:
            self._handed_back = True

    def _release(self, stop_queries: bool, drop_views: bool) -> None:
        self._stop_keepalive.set()
        if self._held:
            with swallowed("recording the session's release in the catalog"):
                self.catalog.release_session(self.url, self.session_id)
        release_process_settings()
        self._stop_explaining()
        deadline = time.monotonic() + CLOSE_DEADLINE
        answered = self._monitor.close(timeout=CLOSE_DEADLINE / 2) if self._monitor is not None else True
        if not stop_queries:
            keep_session_on_close(self.spark)
        steps: list[tuple[Callable[[], object], str]] = (
            [(self.stop_all, "stopping the session's queries")] if stop_queries else [])
        if drop_views and any(q.view for q in self.known_queries()):
            steps.append((lambda: self._drop_views(running_too=stop_queries), "dropping the rows kept by queries"))
        steps.append((self.spark.stop, "releasing the session"))
        for step, what in steps:
            left = deadline - time.monotonic()
            if not answered or left <= 0:
                log.info("abandoned %s: the server did not answer", what)
                return
            try:
                within(left, step, what)
            except DeadlineExceeded:
                answered = False
            except Exception:
                log.debug("%s failed", what, exc_info=True)
