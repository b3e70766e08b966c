"""The Session: a pyspark Connect SparkSession plus streaming helpers (sparkscope.connect() makes one).

It holds its parts, one concern each: the queries it knows (queries/tracking.py), reading their sinks and state
(queries/sink_reading.py), and starting them (queries/starting.py). This file opens, checks and closes it.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ._pyspark import (default_retry_policy, fill_confs_the_server_lacks, hold_process_settings, keep_session_on_close,
                       make_active, pass_on_active, release_process_settings, session_builder, session_id, user_id)
from .catalog.records import ACTIVE, Catalog, Record
from .deadline import within
from .logs import log, swallowed
from .errors import (AuthenticationFailed, ConnectionFailed, DeadlineExceeded, ServerUnreachable,
                     SparkscopeError, UnsupportedOperation, call, explain_unreachable, session_changed, session_closed,
                     translate, translated)
from .connection.credentials import channel_credentials
from .connection.probe import probe, try_probe
from .queries.bounded_sink import BoundedSink
from .queries.server_jar import Kept, ServerJar
from .queries.dataframes import is_dataframe
from .queries.query import Query, QueryInfo
from .rows import Rows
from .queries.sink_reading import SinkReader
from .queries.starting import CheckpointUser, QueryStarter
from .queries.tracking import QueryBook
from .connection.remote import Target

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession

    from .monitoring.monitor import Monitor
    from .monitoring.progress import Progress

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
    return [default_retry_policy(max_retries=RETRIES, initial_backoff=200, max_backoff=1000, backoff_multiplier=2.0,
                                 jitter=0, max_server_retry_delay=1000)]


class ServerHere(Protocol):
    """The embedded server of this machine, as a Session looks at it (sparkscope.server.connecting makes one).
    Each answer is about the server on `port` only, and only reads: none starts, stops or deletes anything."""

    def ui(self, port: int) -> str | None: ...

    def restarted_under(self, port: int, token: str | None) -> bool: ...

    def serves(self, port: int) -> bool: ...

    def busy_tasks(self, port: int, window: float) -> list[float] | None: ...

    def out_of_memory_exit(self) -> SparkscopeError | None: ...


KEEPALIVE_SECONDS = 300.0
# Set in every session sparkscope opens: a session id the server does not know comes back without it.
SESSION_MARKER = "sparkscope.session.opened"

# what a closed Session still answers: who it was, and the client-side catalog
USABLE_AFTER_CLOSE = frozenset({"close", "url", "session_id", "target", "server_version", "server_home", "catalog",
                                "started_here", "known_queries", "user"})


class Session:
    """A connection to one Spark Connect session. `spark` is the real pyspark SparkSession. Like pyspark's own
    session holds its managers, it holds its parts: the queries it knows (QueryBook), reading their sinks and
    state (SinkReader), and starting them (QueryStarter); its methods below hand each call to the part's."""

    is_dataframe = staticmethod(is_dataframe)

    _held = False  # opened for its user (not only looked into): the catalog names this process as its holder
    _rejoined_from: int | None = None  # rejoined a session of the server: the pid that held it (0: none lives)
    _handed_back = False  # close() has finished: its public methods now say so instead of failing in pyspark

    def __getattribute__(self, name: str) -> Any:
        if name[:1] != "_" and name not in USABLE_AFTER_CLOSE and object.__getattribute__(self, "_handed_back"):
            raise session_closed()
        return object.__getattribute__(self, name)

    def __init__(self, spark: SparkSession, target: Target, server_version: str,
                 keepalive: float = KEEPALIVE_SECONDS, server_home: Path | None = None,
                 here: ServerHere | None = None):
        from .connection.capabilities import KnownServers, ServerFacts
        from .kafka.connector import KafkaSupport
        from .paths import state_dir
        from .queries.sources import Sources

        self.spark = spark
        self.target = target
        self.server_version = server_version
        with swallowed("setting the confs this client's createDataFrame asks an older server for"):
            fill_confs_the_server_lacks(spark, server_version)
        self.kafka = KafkaSupport(spark, server_version, target.profile)
        # what the server can run (its Python, Kafka connector, checkpoint root), asked on first need
        self.facts = ServerFacts(spark, url=target.with_session(None).display, spark_version=server_version,
                                 kafka_connector=self.kafka.has_connector, checkpoint_root=lambda: self.checkpoint_root,
                                 auth=bool(target.token), tls=target.needs_tls,
                                 known=KnownServers(Path(server_home or state_dir()) / "servers.json"),
                                 bounded_sink=lambda: self._jar.describe())
        self.kafka.own_source_problem = lambda: self.facts.get().own_kafka_problem()
        self._jar = ServerJar(spark)  # sparkscope's jar on the server: its sink, its memory source
        self.source = Sources(spark, self.kafka, same_machine=target.on_this_machine, jar=self._jar)
        self._closed = False
        self._checkpoint_root: str | None = None
        self._stop_keepalive = threading.Event()
        self.catalog = Catalog.in_home(server_home)
        self._stop_explaining: Callable[[], None] = lambda: None
        self.server_home = server_home  # the state dir of the embedded server it talks to (None: the default)
        self._book = QueryBook(self)
        self._bounded_sink = BoundedSink(spark, self._jar)
        self._sinks = SinkReader(self, self._book, self._bounded_sink)
        self._starter = QueryStarter(self, self._book, self._bounded_sink)
        self.here = here  # the embedded server of this machine, when this session may be on it
        self._warming: threading.Thread | None = None
        if keepalive > 0:
            threading.Thread(target=self._keepalive, args=(keepalive,), name="sparkscope-keepalive",
                             daemon=True).start()

    def activate(self) -> None:
        """Make this the session pyspark's getActiveSession() returns in the calling thread (and the
        default one in every thread)."""
        make_active(self.spark)

    def _known_to_server(self) -> bool:
        """Whether this session existed before we attached: our marker, or queries of its own."""
        if call(self.spark.conf.get, SESSION_MARKER, None):
            return True
        return bool(self._book.known_queries())

    # -- identity -------------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return str(self.target.session_id)

    @property
    def user(self) -> str | None:
        """The user name the server sees (SPARK_USER or USER on this machine)."""
        return user_id(self.spark)

    @property
    def inherits_listener(self) -> bool:
        """It rejoined a session that no live process of this machine holds (its client crashed, or ended without
        closing it): a live-event listener the server keeps for that session is the gone client's, and is
        replaced (the server keeps one per session, and refuses another)."""
        return self._rejoined_from == 0

    @property
    def url(self) -> str:
        """The server URL with the token hidden."""
        return self.target.with_session(None).display

    def __repr__(self) -> str:
        return f"<sparkscope.Session {self.url} session_id={self.session_id}>"

    @property
    def checkpoint_root(self) -> str | None:
        if self._checkpoint_root is None:
            value = call(self.spark.conf.get, "spark.sql.streaming.checkpointLocation", "")
            self._checkpoint_root = value or ""
        return self._checkpoint_root or None

    # -- QueryBook (queries/tracking.py) ----------------------------------------------------
    def query(self, name_or_id: str | Query) -> Query:
        """Find a query by name, id, or unique id prefix (active ones first)."""
        return self._book.query(name_or_id)

    def queries(self, all: bool = False) -> list[QueryInfo]:  # noqa: A002 - the word users expect
        """Every query of this session: active ones and those that stopped or failed (until reset)."""
        return self._book.queries(all)

    def running(self) -> list[Query]:
        """This session's active queries (one RPC), including ones sparkscope did not start."""
        return self._book.running()

    def started_here(self, query: Query) -> bool:
        """Whether this process started `query` (not found it: reattached, or another client's)."""
        return self._book.started_here(query)

    def known_queries(self) -> list[Query]:
        """The queries this process knows of in this session, without an RPC (for completion, alerts)."""
        return self._book.known_queries()

    def recent_progress(self, query: Query, last: int | None = None) -> list[Progress]:
        """The progress of the query's last `last` batches (or of its latest one): from the monitor when
        it listens (no RPC), otherwise one call to the server."""
        return self._book.recent_progress(query, last)

    def active_count(self) -> int:
        """How many of this session's queries run, as far as this process knows, without an RPC: the
        monitor's view when it listens (a failed query counts as ended at once), else what we saw."""
        return self._book.active_count()

    def stop_all(self) -> list[str]:
        return self._book.stop_all()

    def await_any_termination(self, timeout: float | None = None) -> bool:
        return self._book.await_any_termination(timeout)

    def reset_terminated(self) -> int:
        """Forget stopped and failed queries; returns how many were forgotten."""
        return self._book.reset_terminated()

    @property
    def monitor(self) -> Monitor:
        """Live progress of every query of this session, pushed by a listener (started on first use)."""
        return self._book.monitor

    def forget(self, name: str, *, delete_checkpoint: bool = False) -> Record:
        """Remove a stopped, failed or lost query from the catalog; its checkpoint stays unless asked."""
        return self._book.forget(name, delete_checkpoint=delete_checkpoint)

    def idle_timeout(self) -> tuple[float, bool]:
        """(seconds, known): how long the server keeps this session, and its queries, once no client
        calls it; assumed to be Spark's default 60 minutes when the server does not say."""
        return self._book.idle_timeout()

    def lost_queries(self) -> list[Record]:
        """Catalogued queries recorded as running that no longer run because their session is gone from
        the server (restarted, or timed out): marked lost, and returned. Each other session they ran in costs a
        look into it: about five RPCs (the probe, its marker, its active queries twice, its release)."""
        return self._book.lost_queries()

    def catalog_records(self) -> list[Record]:
        """This server's catalog, after marking the queries that are gone from the server as lost."""
        return self._book.catalog_records()

    # -- SinkReader (queries/sink_reading.py) -----------------------------------------------
    def sink_dataframe(self, name_or_query: str | Query) -> DataFrame:
        """A batch DataFrame over what a query wrote (memory table, file path or table)."""
        return self._sinks.sink_dataframe(name_or_query)

    def batch_dataframe(self, query: Query, batch_id: int) -> DataFrame:
        """The rows one batch of a query of the default (bounded) sink wrote, while the sink keeps them."""
        return self._sinks.batch_dataframe(query, batch_id)

    def peek(self, name_or_query: str | Query, n: int = 20, where: str | None = None,
             order_by: str | list[str] | None = None) -> Rows:
        """Up to `n` rows of a query's sink; the filter, order and limit run on the server."""
        return self._sinks.peek(name_or_query, n, where, order_by)

    def query_plan(self, name: str) -> str:
        """The extended plan of query `name`: a running one's own, else the plan the catalog recorded."""
        return self._sinks.query_plan(name)

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

    def explain(self, df: DataFrame, extended: bool = False) -> str:
        """The plan of a DataFrame, as DataFrame.explain() would print it."""
        return self._sinks.explain(df, extended)

    def sql(self, statement: str, n: int = 1000) -> Rows:
        """Run batch SQL and fetch up to `n` rows."""
        return self._sinks.sql(statement, n)

    # -- what sparkscope keeps on the server (queries/server_jar.py) ----------------------------
    def kept(self) -> list[Kept]:
        """What sparkscope keeps on this server, every user's: each ring (a bounded query's rows) and feed (a memory
        source's batches) with its owner, query, state, rows, bytes and age. Each ends by itself, a grace period
        after nothing uses it; `free_kept()` frees yours at once."""
        return self._jar.kept()

    def free_kept(self) -> list[Kept]:
        """Free now what your user keeps on this server that nothing uses any more (rows of ended queries in their
        grace period, feeds of closed sessions); what is freed is returned."""
        return self._jar.free()

    def operation(self, tag: str | None = None) -> contextlib.AbstractContextManager[str]:
        """Tag the RPCs this thread makes, so `cancel(tag)` can interrupt just them."""
        return self._sinks.operation(tag)

    def cancel(self, tag: str) -> list[str]:
        """Interrupt the operations with this tag (never interruptAll: it would stop streaming queries)."""
        return self._sinks.cancel(tag)

    # -- QueryStarter (queries/starting.py) -------------------------------------------------
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

    def fresh_checkpoint(self, name: str) -> str | None:
        """A new folder under the server's checkpoint root for a query named `name` (None without a root).
        Left to itself Spark uses <root>/<name>, so a later query of the same name would resume (or fail
        on) an unrelated query's offsets and state."""
        return self._starter.fresh_checkpoint(name)

    def on_checkpoint(self, checkpoint: str | None) -> list[CheckpointUser]:
        """The queries running now on `checkpoint` (this session's, and other sessions' the catalog knows): Spark
        stops them when a query starts on it. Asked just before pyspark's own start, for record_started."""
        return self._starter.on_checkpoint(checkpoint)

    def record_started(self, handle: Any, df: DataFrame, *, sink: str, mode: str, trigger: str | None,
                       checkpoint: str | None, options: dict[str, Any], path: str | None = None,
                       table: str | None = None, checkpoint_users: list[CheckpointUser] | None = None) -> Query:
        """A query that code of this process started with pyspark's own writeStream…start(): known to
        this session as started here, and recorded in the catalog so that it can be restarted.
        `checkpoint_users`: on_checkpoint(checkpoint) just before it started."""
        return self._starter.record_started(handle, df, sink=sink, mode=mode, trigger=trigger, checkpoint=checkpoint,
                                            options=options, path=path, table=table,
                                            checkpoint_users=checkpoint_users)

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
             activate: bool = True, server_home: Path | None = None, here: ServerHere | None = None) -> Session:
        """Open (or, with target.session_id, rejoin) a session. `activate`: make it the session pyspark's
        own helpers use (DDL parsing); off for sessions only looked into."""
        version = probe(target, timeout=timeout)
        hold_process_settings()  # released when it closes
        try:
            with translated():
                certificates = target.root_certificates()
                spark = session_builder(target.url(with_token=True), None if certificates is None else
                                        lambda token: channel_credentials(token, certificates)).create()
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
                session._book.adopt_active()
                with swallowed("asking the catalog who holds the session"):
                    session._rejoined_from = session.catalog.holder(session.url, session.session_id,
                                                                    this_process_too=True) or 0
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
                           f"session of yours; sparkscope.connect({self.target.bare_url!r}, session_id={other!r}) "
                           "joins the session it runs in", error.error_class, code="query_in_other_session_only",
                           data={"name": name, "session_id": other, "url": self.target.bare_url})

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

    def on_embedded_server(self) -> bool:
        """Whether this session's server is one sparkscope started on this machine (embedded, or on its --workers
        cluster): then the paths its queries read and write are this machine's."""
        port = self.target.port
        return self.here is not None and self.target.on_this_machine and port is not None and self.here.serves(port)

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

    def explain_error(self, error: SparkscopeError) -> SparkscopeError:
        """`error`, or what this session knows of its cause: the embedded server restarted under it
        (explain_restart), or a Python worker that could not start on a server whose Python lacks what it needs
        (what the server was found to lack, instead of "did not connect back in time")."""
        embedded = self.target.source == "local" or self.target.token_source == "state"
        if error.code == "server_out_of_memory" and self.here is not None and embedded:  # it exited: what ran on it
            died = None
            with swallowed("reading the embedded server's log"):
                died = self.here.out_of_memory_exit()
            if died is not None:
                return died
        if error.code == "python_worker_failed":
            problem = None
            with swallowed("asking what the server's Python lacks"):
                problem = self.facts.get().foreach_batch_problem()
            if problem is not None:
                from .connection.capabilities import ADD_PACKAGES

                return UnsupportedOperation(f"The server could not start a Python worker for this: {problem}",
                                            ADD_PACKAGES, error.error_class, code="server_lacks_python",
                                            data={"problem": problem})
        if error.error_class == "NO_ACTIVE_SESSION" and not self._closed and self.spark.client.is_closed:
            return session_changed(self.target.bare_url)  # pyspark closes only on close() and on a changed session
        if error.code == "session_changed":
            return session_changed(self.target.bare_url)
        if error.code in ("table_not_found", "query_not_found"):
            elsewhere = self._only_elsewhere(error)
            if elsewhere is not None:
                return elsewhere
        explained = self.explain_restart(error)
        if explained is error and error.code == ServerUnreachable.code and not self._closed:  # not Kafka's
            return self._answers_again(error)
        return explained

    def _answers_again(self, error: SparkscopeError) -> SparkscopeError:
        """`error`; or, when the server answers a new connection now, what that means: this session's connection
        broke (the server went away, and its channel waits before it connects again), so it restarted or the
        network dropped the connection."""
        if try_probe(self.target, timeout=3) is None:
            return error
        return ConnectionFailed(f"The server at {self.target.bare_url} did not answer this session, yet answers a new "
                                "connection: it restarted (its queries ended with it), or the network dropped this "
                                "session's connection", "Open a new session with sparkscope.connect()",
                                error.error_class, code="session_changed")

    def explain_restart(self, error: SparkscopeError) -> SparkscopeError:
        """`error`; or, when the embedded server was stopped and started again under this session (its state
        dir holds the new server's token), the error that says so. The new server refuses the old token, and
        until the channel's reconnect backoff ends the call may not even reach it: either way the user gave
        no token, and this session and its queries are gone from the new server."""
        if error.code not in (AuthenticationFailed.code, ServerUnreachable.code) or self.target.token_source != "state":
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
        spark = self.spark
        try:
            self._release(stop_queries, drop_views)
        finally:
            self._handed_back = True
            with swallowed("making another open session the active one"):
                pass_on_active(spark)

    def _release(self, stop_queries: bool, drop_views: bool) -> None:
        self._stop_keepalive.set()
        if self._held:
            with swallowed("recording the session's release in the catalog"):
                self.catalog.release_session(self.url, self.session_id)
        release_process_settings()
        self._stop_explaining()
        deadline = time.monotonic() + CLOSE_DEADLINE
        answered = self._book.close_monitor(timeout=CLOSE_DEADLINE / 2)
        if not stop_queries:
            keep_session_on_close(self.spark)
        steps: list[tuple[Callable[[], object], str]] = (
            [(self.stop_all, "stopping the session's queries")] if stop_queries else [])
        if drop_views and any(q.view for q in self.known_queries()):
            steps.append((lambda: self._starter.drop_views(running_too=stop_queries), "dropping the rows kept by queries"))
        if stop_queries:  # the memory sources a test fed go with the session, unless queries stay to read them
            steps += [(source.forget, f"dropping the memory source {source.name}") for source in self.source.fed]
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
