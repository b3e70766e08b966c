"""The Session: a pyspark Connect SparkSession plus streaming helpers (sparkscope.connect() makes one).

It holds its parts, one concern each: the queries it knows (queries/tracking.py), reading their sinks and state
(queries/sink_reading.py), and starting them (queries/starting.py). This file opens, checks and closes it.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._pyspark import (default_retry_policy, fill_confs_the_server_lacks, hold_process_settings, keep_session_on_close,
                       make_active, pass_on_active, release_process_settings, session_builder, session_id, user_id)
from .catalog.records import ACTIVE, Catalog, Record
from .deadline import within
from .deprecation import deprecated, renamed_arguments
from .logs import log, swallowed
from .errors import AuthenticationFailed, ConnectionFailed, DeadlineExceeded, ServerUnreachable, SparkscopeError, UnsupportedOperation, session_changed, session_closed
from .error_reading import call, translate, translated
from .error_causes import explain_unreachable
from .connection.credentials import channel_credentials
from .connection.deadlines import DeadlineInterceptor, answered_within
from .connection.probe import probe, try_probe
from .queries.bounded_sink import BoundedSink
from .queries.server_jar import Kept, KeptTotal, ServerJar
from .queries.query import Query
from .rows import Rows
from .queries.plumbing import SessionClient
from .queries.sink_reading import SinkReader
from .queries.starting import QueryStarter
from .queries.tail import TailBatch, follow
from .queries.tracking import QueryManager
from .connection.remote import Target
from .session_server import LocalServerView, SessionServer

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession

    from .monitoring.lateness import Lateness
    from .queries.sources import Sources

RETRIES = 3  # after 0.2, 0.4 and 0.8 s
CLOSE_DEADLINE = 10.0  # seconds for close() in all: listener, stopping queries, releasing
CHECK_DEADLINE = 5.0


def retry_policies() -> list[Any]:
    """pyspark's default policy retries an unavailable server for about 20 minutes; an interactive
    tool gives up after 1.4 s. It must still be pyspark's DefaultPolicy (the base RetryPolicy
    retries nothing): a call that meets a connection the network just cut fails with UNAVAILABLE
    ("Stream removed") and succeeds when retried on a new one."""
    return [default_retry_policy(max_retries=RETRIES, initial_backoff=200, max_backoff=1000, backoff_multiplier=2.0,
                                 jitter=0, max_server_retry_delay=1000)]


KEEPALIVE_SECONDS = 300.0
# Set in every session sparkscope opens: a session id the server does not know comes back without it.
SESSION_MARKER = "sparkscope.session.opened"

# what a closed Session still answers: who it was, and the client-side catalog
USABLE_AFTER_CLOSE = frozenset({"close", "url", "session_id", "server", "catalog", "streams", "user"})

# names of the API before 0.2, and where each went: ss.<old> still works for one release, with a DeprecationWarning
MOVED = {"spark_ui": "server.ui", "busy_tasks": "server.busy_tasks", "idle_timeout": "server.idle_timeout",
         "on_embedded_server": "server.embedded", "checkpoint_root": "server.checkpoint_root()",
         "kafka": "server.kafka", "facts": "server.facts", "target": "server.target", "server_version": "server.version",
         "server_home": "server.home", "warm_up": "server.warm_up", "warmed": "server.warmed",
         "known_queries": "streams.known_queries", "started_here": "streams.started_here",
         "active_count": "streams.active_count", "lost_queries": "streams.lost_queries",
         "catalog_records": "streams.catalog_records", "running_in": "streams.running_in",
         "stop_elsewhere": "streams.stop_elsewhere", "sink_dataframe": "client.sink_dataframe",
         "batch_dataframe": "client.batch_dataframe", "query_plan": "client.query_plan", "operation": "client.operation",
         "cancel": "client.cancel", "fresh_checkpoint": "client.fresh_checkpoint",
         "on_checkpoint": "client.on_checkpoint", "record_started": "client.record_started",
         # 0.3: the verbs of the session's queries have one home, ss.streams, as pyspark's spark.streams
         "query": "streams.get", "queries": "streams.queries", "running": "streams.running",
         "recent_progress": "streams.recent_progress", "monitor": "streams.monitor", "stop_all": "streams.stop_all",
         "await_any_termination": "streams.await_any_termination", "reset_terminated": "streams.reset_terminated",
         "forget": "streams.forget",
         # 0.3: what only the front ends use is the plumbing's, ss.client
         "explain_error": "client.explain_error", "inherits_listener": "client.inherits_listener"}
# 0.3: parts the Session no longer shows, each verb having one home: the Session's own, or the front ends' ss.client
RETIRED_PARTS = {"sinks": ("_sinks", "ss.sinks is deprecated: its verbs are the Session's own (ss.peek, ss.state, "
                                     "ss.late, ss.sql, ss.explain, …), the rest is ss.client"),
                 "starter": ("_starter", "ss.starter is deprecated: its verbs are the Session's own (ss.start, "
                                         "ss.restart, ss.restart_lost), the rest is ss.client")}


class Session:
    """A connection to one Spark Connect session (sparkscope.connect() opens one). `spark` is the real pyspark
    SparkSession. Like pyspark's own session holds its managers, it holds its parts, each a property that asks the
    server nothing: the server (`server`), the catalog (`catalog`), the queries it knows (`streams`), and the plumbing
    the front ends build on (`client`). Its own methods are what a user calls: starting queries, reading what they
    wrote and hold, what it keeps on the server; each verb has this one home."""

    _held = False  # opened for its user (not only looked into): the catalog names this process as its holder
    _rejoined_from: int | None = None  # rejoined a session of the server: the pid that held it (0: none lives)
    _handed_back = False  # close() has finished: its public methods now say so instead of failing in pyspark

    def __init__(self, spark: SparkSession, target: Target, server_version: str,
                 keepalive: float = KEEPALIVE_SECONDS, server_home: Path | None = None,
                 here: LocalServerView | None = None):
        from .connection.capabilities import KnownServers, ServerFacts
        from .kafka.connector import KafkaSupport
        from .paths import state_dir
        from .queries.sources import Sources

        self._spark = spark
        self._target = target
        with swallowed("setting the confs this client's createDataFrame asks an older server for"):
            fill_confs_the_server_lacks(spark, server_version)
        kafka = KafkaSupport(spark, server_version, target.profile)
        # what the server can run (its Python, Kafka connector, checkpoint root), asked on first need
        self._facts = ServerFacts(spark, url=target.with_session(None).display, spark_version=server_version,
                                  kafka_connector=kafka.has_connector,
                                  checkpoint_root=lambda: self.server.checkpoint_root(),
                                  auth=bool(target.token), tls=target.needs_tls,
                                  known=KnownServers(Path(server_home or state_dir()) / "servers.json"),
                                  bounded_sink=lambda: (self._jar.describe(), self._jar.users(), self._jar.limits()))
        kafka.own_source_problem = lambda: self._facts.get().own_kafka_problem()
        self._server = SessionServer(spark, target, server_version, kafka=kafka, facts=self._facts, here=here,
                                     home=server_home)
        self._jar = ServerJar(spark)  # sparkscope's jar on the server: its sink, its memory source
        self._source = Sources(spark, kafka, same_machine=target.on_this_machine, jar=self._jar)
        self._closed = False
        self._stop_keepalive = threading.Event()
        self._catalog = Catalog.in_home(server_home)
        self._stop_explaining: Callable[[], None] = lambda: None
        self._server_home = server_home  # the state dir of the embedded server it talks to (None: the default)
        self._bounded_sink = BoundedSink(spark, self._jar)
        self._book = QueryManager(self, self._looking_into, self._bounded_sink.latency, closed=lambda: self._handed_back)
        self._sinks = SinkReader(self, self._book, self._bounded_sink)
        self._starter = QueryStarter(self, self._book, self._bounded_sink)
        self._client = SessionClient(spark, self._sinks, self._starter, explain_error=self._explain_error,
                                     inherits_listener=lambda: self._rejoined_from == 0)
        self._here = here  # the embedded server of this machine, when this session may be on it
        if keepalive > 0:
            threading.Thread(target=self._keepalive, args=(keepalive,), name="sparkscope-keepalive",
                             daemon=True).start()

    def activate(self) -> None:
        """Make this the session pyspark's getActiveSession() returns in the calling thread (and the
        default one in every thread)."""
        make_active(self._spark)

    def _known_to_server(self) -> bool:
        """Whether this session existed before we attached: our marker, or queries of its own."""
        if call(self._spark.conf.get, SESSION_MARKER, None):
            return True
        return bool(self._book.known_queries())

    # -- identity and parts: no call to the server ------------------------------------------------
    @property
    def spark(self) -> SparkSession:
        """pyspark's own SparkSession of this session: DataFrames, SQL, readStream."""
        return self._spark

    @property
    def source(self) -> Sources:
        """Streaming sources: rate, memory, files, kafka, socket, table."""
        return self._source

    @property
    def server(self) -> SessionServer:
        """The server it talks to: its Spark version, what it can run, its UI, its checkpoint root."""
        return self._server

    @property
    def catalog(self) -> Catalog:
        """Every query sparkscope started on this machine's servers, kept in its state dir: what restarts them."""
        return self._catalog

    @property
    def client(self) -> SessionClient:
        """The plumbing the REPL and the notebook build on, as pyspark's `spark.client` is a SparkSession's: a
        query's sink as a DataFrame, tagging and interrupting what a thread runs, recording a query pyspark's own
        writeStream started. A script needs none of it."""
        return self._client

    @property
    def session_id(self) -> str:
        return str(self._target.session_id)

    @property
    def user(self) -> str | None:
        """The user this session acts as. On a server that checks tokens (every server sparkscope starts), the server
        says it: a user's token acts as that user, whatever this machine's login name. Elsewhere, the user id this
        client sends (SPARK_USER or USER on this machine)."""
        with contextlib.suppress(SparkscopeError):  # a server that cannot load the jar: the id this client sends
            caller = self._jar.hello.get("caller")
            if caller:
                return str(caller[0])
        return user_id(self._spark)

    @property
    def url(self) -> str:
        """The server URL with the token hidden."""
        return self._target.with_session(None).display

    def __repr__(self) -> str:
        return f"<sparkscope.Session {self.url} session_id={self.session_id}>"

    def __getattr__(self, name: str) -> Any:
        """A name of an earlier API (MOVED, RETIRED_PARTS): where it went, with a DeprecationWarning."""
        moved = MOVED.get(name)
        if moved is None and name in RETIRED_PARTS:
            attribute, message = RETIRED_PARTS[name]
            deprecated(message)
            return getattr(self, attribute)
        if moved is None:
            raise AttributeError(f"'Session' object has no attribute {name!r}")
        import inspect

        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None and str(caller.f_globals.get("__name__", "")).startswith("sparkscope."):  # its own code
            raise AttributeError(f"'Session' object has no attribute {name!r}: sparkscope's own code uses ss.{moved}")

        deprecated(f"ss.{name} is deprecated: use ss.{moved}")
        found: Any = self
        for part in moved.rstrip("()").split("."):
            found = getattr(found, part)
        return found() if moved.endswith("()") else found

    # -- the queries: ss.streams (QueryManager, queries/tracking.py) is their one home ------------------------
    @property
    def streams(self) -> QueryManager:
        """This session's streaming queries, as `spark.streams` holds a SparkSession's: get(name), queries(),
        running(), stop(name), stop_all(), await_any_termination(), reset_terminated(), the monitor, the catalog's
        lost and forgotten ones."""
        return self._book

    def stop(self, name_or_query: str | Query | None = None) -> None:
        """End this session, as pyspark's `spark.stop()` does: close(). (`ss.stop(name)` of the API before 0.3 stops
        one query, with a DeprecationWarning: ss.streams.stop(name).)"""
        if name_or_query is None:
            self.close()
            return

        deprecated("ss.stop(name) is deprecated: use ss.streams.stop(name) (ss.stop() ends the session, as "
                   "spark.stop() does)")
        self._book.stop(name_or_query)

    # -- reading what queries wrote and hold (SinkReader: queries/sink_reading.py) ----------------
    def peek(self, name_or_query: str | Query, n: int = 20, where: str | None = None,
             order_by: str | list[str] | None = None) -> Rows:
        """Up to `n` rows of a query's sink; the filter, order and limit run on the server."""
        return self._sinks.peek(name_or_query, n, where, order_by)

    def tail(self, name_or_query: str | Query, *, batches: int | None = None, timeout: float | None = None,
             limit: int = 20) -> Iterator[TailBatch]:
        """The rows each new batch of a query writes, as it commits (at most `limit` of each; `.more` says how many
        were left out): a generator that ends after `batches` batches, `timeout` seconds, or the query's end. For a
        query of the default or the memory sink; it runs on when you stop iterating."""
        return follow(self, self._book.get(name_or_query), batches=batches, timeout=timeout, limit=limit)

    def state(self, name: str, *, batch: int | None = None, operator: int | None = None, store: str | None = None,
              variable: str | None = None, timers: bool = False) -> DataFrame:
        """What a stateful operator of query `name` holds, from its checkpoint (after its newest batch, or
        `batch`), keys and values as columns; `timers`: the timers a transformWithState query has registered.
        Works on running, stopped, failed and lost queries."""
        return self._sinks.state(name, batch=batch, operator=operator, store=store, variable=variable, timers=timers)

    def state_changes(self, name: str, *, start: int | None = None, end: int | None = None,
                      operator: int | None = None, store: str | None = None,
                      variable: str | None = None) -> DataFrame:
        """How the state of `name` changed, batch by batch: change type, key, old and new value."""
        return self._sinks.state_changes(name, start=start, end=end, operator=operator, store=store, variable=variable)

    def state_info(self, name: str) -> Any:
        """The stateful operators of `name`: (StateOf, [(operator, schema, rows and bytes per partition)])."""
        return self._sinks.state_info(name)

    def late(self, name: str) -> Lateness:
        """Why rows of query `name` were dropped as late: the event-time column and delay of each withWatermark, the
        watermark each batch judged by and the late rows it dropped; `.verdict(at)` says whether a row of event time
        `at` would be dropped. Works on running, stopped and lost queries."""
        return self._sinks.late(name)

    def explain(self, df: DataFrame, extended: bool = False) -> str:
        """The plan of a DataFrame, as DataFrame.explain() would print it."""
        return self._sinks.explain(df, extended)

    @renamed_arguments(n="limit")
    def sql(self, statement: str, limit: int | None = 1000) -> Rows:
        """Run batch SQL and fetch at most `limit` rows (None: every row). Rows.truncated says when there were more."""
        return self._sinks.sql(statement, limit)

    # -- what sparkscope keeps on the server (queries/server_jar.py) ----------------------------
    def kept(self) -> list[Kept]:
        """What sparkscope keeps on this server for your user: each ring (a bounded query's rows) and feed (a memory
        source's batches) with its query, state, rows, bytes and age. Each ends by itself, a grace period after
        nothing uses it; `free_kept()` frees yours at once. Another user's are theirs alone: never listed here."""
        return self._jar.listing()[0]

    def kept_by_others(self) -> list[KeptTotal]:
        """What each other user keeps on this server, in totals (rings, feeds, bytes): for the server's owner (its
        own token) only; anyone else gets an empty list. No ring's name, no session."""
        return self._jar.listing()[1]

    def free_kept(self, *, every_user: bool = False) -> list[Kept]:
        """Free now what your user keeps on this server that nothing uses any more (rows of ended queries in their
        grace period, feeds of closed sessions); what is freed is returned. `every_user`: every user's that nothing
        uses, for the server's owner."""
        return self._jar.free(every_user=every_user)

    # -- starting queries (QueryStarter: queries/starting.py) -------------------------------------
    def start(self, df: DataFrame, name: str, sink: str | None = None, *, mode: str | None = None,
              trigger: str | None = None, checkpoint: str | None = None, path: str | None = None,
              table: str | None = None, options: dict[str, Any] | None = None,
              foreach_batch: Callable[[Any, int], None] | None = None, keep: str | int | None = None,
              grace: str | float | None = None) -> Query:
        """Start `df` as a query named `name`; the output mode is inferred. The default sink of an append or update
        stream keeps the newest `keep` rows ('10000', '50k', '10m', '10m,50000'), and they outlive the query by
        `grace` ('5m'; the server's spark.sparkscope.grace, 15 minutes, by default)."""
        return self._starter.start(df, name, sink, mode=mode, trigger=trigger, checkpoint=checkpoint, path=path,
                                   table=table, options=options, foreach_batch=foreach_batch, keep=keep, grace=grace)

    def restart(self, name: str, *, fresh: bool = False) -> Query:
        """Start a catalogued query again from its recorded plan, sink and checkpoint, so it continues
        where its last committed batch ended (`fresh`: with a new checkpoint; the old one is kept)."""
        return self._starter.restart(name, fresh=fresh)

    def restart_lost(self, skip: list[str] | None = None) -> list[tuple[Record, Query | SparkscopeError]]:
        """Start again, from their checkpoints, the catalogued queries of this server that were lost (after
        marking those that are gone from it), but those named in `skip`; each with its new Query, or the error
        that kept it back."""
        return self._starter.restart_lost(skip)

    @classmethod
    def open(cls, target: Target, *, timeout: float = 5.0, keepalive: float = KEEPALIVE_SECONDS,
             activate: bool = True, server_home: Path | None = None, here: LocalServerView | None = None) -> Session:
        """Open (or, with target.session_id, rejoin) a session. `activate`: make it the session pyspark's
        own helpers use (DDL parsing); off for sessions only looked into."""
        version = probe(target, timeout=timeout)
        hold_process_settings()  # released when it closes
        try:
            with translated():
                certificates = target.root_certificates()
                spark = session_builder(target.url(with_token=True), None if certificates is None else
                                        lambda token: channel_credentials(token, certificates),
                                        interceptors=[DeadlineInterceptor()]).create()
        except BaseException:
            release_process_settings()
            raise
        spark.client.set_retry_policies(retry_policies())
        session = cls(spark, target.with_session(session_id(spark)), version, keepalive, server_home, here)
        try:
            if target.session_id and not session._known_to_server():
                session.close(stop_queries=True)  # the server made a new, empty session: release it
                raise ConnectionFailed(
                    f"The server has no session {target.session_id} of this user (it was closed, timed out, the "
                    "server restarted, or it is another user's)", "Connect without session_id to open a new session",
                    code="session_unknown",
                    data={"session_id": str(target.session_id)})
            if target.session_id:  # rejoined (it has our marker): its running queries are this session's
                session._book.adopt_active()
                with swallowed("asking the catalog who holds the session"):
                    session._rejoined_from = session.catalog.holder(session.url, session.session_id,
                                                                    this_process_too=True) or 0
            else:
                try:  # the first call as this session's user: a server that checks tokens says here if it refuses
                    call(spark.conf.set, SESSION_MARKER, str(int(time.time())))
                except ConnectionFailed:
                    with contextlib.suppress(Exception):  # what it holds of this process goes back
                        session.close(stop_queries=False)
                    raise
                except SparkscopeError:  # a server that refuses unknown keys still works
                    pass
            if activate or not target.session_id:  # a session only looked into is not recorded again
                with swallowed("recording the session in the catalog"):
                    session.catalog.record_session(session.url, session.session_id, held=activate)
            session._held = activate
            if activate:
                make_active(spark)
            if here is not None and (target.source == "local" or target.token_source == "state"):  # embedded
                session._stop_explaining = explain_unreachable(target.port or 0, here.out_of_memory_exit)
        except BaseException:
            session._stop_keepalive.set()
            if not session._closed:  # never handed out: what it holds of the process goes back
                session._closed = True
                release_process_settings()
            raise
        return session

    @classmethod
    def reattach(cls, target: Target, *, timeout: float = 5.0, server_home: Path | None = None,
                 here: LocalServerView | None = None) -> Session:
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
            if session.streams.running():
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

    def _only_elsewhere(self, error: SparkscopeError) -> SparkscopeError | None:
        """A name this session does not know (a table, or a query) that is a query the catalog says runs in another
        session of this server: Spark's names (the query's, and its temporary view) are per session."""
        found = re.search(r"table or view `(?:[^`]+`\.`)*([^`]+)` cannot be found|No query named '([^']+)'",
                          error.message)
        name = (found.group(1) or found.group(2)) if found else None
        record = None
        with swallowed("looking for the name in the catalog"):
            record = self.catalog.get(self.url, name) if name else None
        if not name or record is None or record.state != ACTIVE or record.session_id in (None, self.session_id):
            return None
        other = str(record.session_id)
        return type(error)(f"{name} is a query of another session ({other[:8]}, started by {record.started_by}); "
                           "its name and its table are that session's", f"ss.peek({name!r}) reads its rows from any "
                           f"session of yours; sparkscope.connect({self._target.bare_url!r}, session_id={other!r}) "
                           "joins the session it runs in", error.error_class, code="query_in_other_session_only",
                           data={"name": name, "session_id": other, "url": self._target.bare_url})

    @contextlib.contextmanager
    def _looking_into(self, other_session: str | None) -> Iterator[Session | None]:
        """Another session of this server, joined only for a look (None when it is gone), and left running."""
        if not other_session:
            yield None
            return
        try:
            other = Session.open(self._target.with_session(other_session), keepalive=0, activate=False,
                                 server_home=self._server_home, here=self._here)
        except ConnectionFailed as exc:
            if isinstance(exc, (ServerUnreachable, DeadlineExceeded)):
                raise
            yield None
            return
        try:
            yield other
        finally:
            other.close(stop_queries=False, drop_views=False)  # the rows its queries keep are its holder's

    def _explain_error(self, error: SparkscopeError) -> SparkscopeError:
        """`error`, or what this session knows of its cause: the embedded server restarted under it
        (_explain_restart), or a Python worker that could not start on a server whose Python lacks what it needs
        (what the server was found to lack, instead of "did not connect back in time")."""
        embedded = self._target.source == "local" or self._target.token_source == "state"
        if error.code == "server_out_of_memory" and self._here is not None and embedded:  # it exited: what ran on it
            died = None
            with swallowed("reading the embedded server's log"):
                died = self._here.out_of_memory_exit()
            if died is not None:
                return died
        if error.code == "python_worker_failed":
            problem = None
            with swallowed("asking what the server's Python lacks"):
                problem = self._facts.get().foreach_batch_problem()
            if problem is not None:
                from .connection.capabilities import ADD_PACKAGES

                return UnsupportedOperation(f"The server could not start a Python worker for this: {problem}",
                                            ADD_PACKAGES, error.error_class, code="server_lacks_python",
                                            data={"problem": problem})
        if error.error_class == "NO_ACTIVE_SESSION" and not self._closed and self._spark.client.is_closed:
            return session_changed(self._target.bare_url)  # pyspark closes only on close() and on a changed session
        if error.code == "session_changed":
            return session_changed(self._target.bare_url)
        if error.code in ("table_not_found", "query_not_found"):
            elsewhere = self._only_elsewhere(error)
            if elsewhere is not None:
                return elsewhere
        explained = self._explain_restart(error)
        if explained is error and error.code == ServerUnreachable.code and not self._closed:  # not Kafka's
            return self._answers_again(error)
        return explained

    def _answers_again(self, error: SparkscopeError) -> SparkscopeError:
        """`error`; or, when the server answers a new connection now, what that means: this session's connection
        broke (the server went away, and its channel waits before it connects again), so it restarted or the
        network dropped the connection."""
        if try_probe(self._target, timeout=3) is None:
            return error
        return ConnectionFailed(f"The server at {self._target.bare_url} did not answer this session, yet answers a new "
                                "connection: it restarted (its queries ended with it), or the network dropped this "
                                "session's connection", "Open a new session with sparkscope.connect()",
                                error.error_class, code="session_changed")

    def _explain_restart(self, error: SparkscopeError) -> SparkscopeError:
        """`error`; or, when the embedded server was stopped and started again under this session (its state
        dir holds the new server's token), the error that says so. The new server refuses the old token, and
        until the channel's reconnect backoff ends the call may not even reach it: either way the user gave
        no token, and this session and its queries are gone from the new server."""
        if error.code not in (AuthenticationFailed.code, ServerUnreachable.code) or self._target.token_source != "state":
            return error
        if self._here is None or self._target.port is None or not self._here.restarted_under(self._target.port,
                                                                                          self._target.token):
            return error
        return ConnectionFailed("The local server was restarted (it has a new token), so this session and its "
                                "queries are gone from it", "Open a new session with sparkscope.connect()",
                                code="server_restarted")

    def check(self) -> None:
        """One cheap RPC with a deadline: raises ConnectionFailed when the server is gone, frozen, or
        no longer knows this session (after a restart it would silently hand out a new, empty one)."""
        try:
            marker = answered_within(CHECK_DEADLINE, lambda: self._spark.conf.get(SESSION_MARKER, None),
                                     "checking the session")
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

    # -- closing --------------------------------------------------------------------------------
    def _keepalive(self, every: float) -> None:
        while not self._stop_keepalive.wait(every):
            with swallowed("keeping the session alive"):
                self._spark.version  # noqa: B018 - one cheap RPC keeps the server session alive

    def close(self, stop_queries: bool = True, drop_views: bool = True) -> list[str]:
        """Stop this session's queries and release it; with stop_queries=False leave both running.
        `drop_views`: drop the rows its bounded-sink queries kept (off for a session only looked into).
        Returns the names of the queries it stopped: one the server did not stop in time runs on.

        Within CLOSE_DEADLINE seconds in all, also on a frozen network: once a step gets no answer,
        the server is not answering, and the remaining calls are abandoned instead of each waiting."""
        if self._closed:
            return []
        self._closed = True
        spark = self._spark
        try:
            return self._release(stop_queries, drop_views)
        finally:
            self._handed_back = True
            with swallowed("making another open session the active one"):
                pass_on_active(spark)

    def _release(self, stop_queries: bool, drop_views: bool) -> list[str]:
        """The steps of close(); the queries stopped. Stopping comes first: what the user asked for is not
        abandoned because the event listener, removed next, was slow to go on a busy server."""
        self._stop_keepalive.set()
        if self._held:
            with swallowed("recording the session's release in the catalog"):
                self.catalog.release_session(self.url, self.session_id)
        release_process_settings()
        self._stop_explaining()
        deadline = time.monotonic() + CLOSE_DEADLINE
        stopped: list[str] = []
        if stop_queries:
            try:
                within(CLOSE_DEADLINE, lambda: self._book.stop_all(stopped), "stopping the session's queries")
            except DeadlineExceeded:
                log.info("abandoned closing the session: the server did not stop its queries in time")
                return list(stopped)
            except Exception:
                log.debug("stopping the session's queries failed", exc_info=True)
        answered = self._book.close_monitor(timeout=max(0.1, min(CLOSE_DEADLINE / 2, deadline - time.monotonic())))
        if not stop_queries:
            keep_session_on_close(self._spark)
        steps: list[tuple[Callable[[], object], str]] = []
        if drop_views and any(q.view for q in self._book.known_queries()):
            steps.append((lambda: self._starter.drop_views(running_too=stop_queries), "dropping the rows kept by queries"))
        if stop_queries:  # the memory sources a test fed go with the session, unless queries stay to read them
            steps += [(source.drop, f"dropping the memory source {source.name}") for source in self._source.fed]
        steps.append((self._spark.stop, "releasing the session"))
        for step, what in steps:
            left = deadline - time.monotonic()
            if not answered or left <= 0:
                log.info("abandoned %s: the server did not answer", what)
                return stopped
            try:
                within(left, step, what)
            except DeadlineExceeded:
                answered = False
            except Exception:
                log.debug("%s failed", what, exc_info=True)
        return stopped


def _refuse_after_close(cls: type[Session]) -> type[Session]:
    """Every public method and property of a Session, but those of USABLE_AFTER_CLOSE, says the session is closed
    once close() finished, instead of failing somewhere in pyspark."""
    def guarded(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def while_open(self: Session, *args: Any, **kwargs: Any) -> Any:
            if self._handed_back:
                raise session_closed()
            return function(self, *args, **kwargs)

        return while_open

    for name, value in list(vars(cls).items()):
        if name.startswith("_") or name in USABLE_AFTER_CLOSE:
            continue
        if isinstance(value, property) and value.fget is not None:
            setattr(cls, name, property(guarded(value.fget), doc=value.__doc__))
        elif callable(value):
            setattr(cls, name, guarded(value))
    return cls


_refuse_after_close(Session)
