"""`sparkscope.connect()` and the Session: a pyspark Connect SparkSession plus streaming helpers."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from dataclasses import replace
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._pyspark import (dataframe_from_plan, explain_string, keep_session_on_close, make_active, session_builder,
                       session_id, user_id)
from . import bounded_sink, durable
from .catalog import ACTIVE, FAILED, STOPPED, Catalog, Record
from .deadline import within
from .logs import log, swallowed
from .errors import (AuthenticationFailed, CatalogError, ConfigError, ConnectionFailed, DeadlineExceeded,
                     QueryNotFound, ServerUnreachable, SparkscopeError, UnsupportedOperation, call, explain_unreachable,
                     translate, translated)
from .paths import for_server
from .planning import (BOUNDED, FILE_SINKS, Retention, Trigger, check_name, check_sink, choose_mode, default_sink,
                       memory_sink_warning, parse_keep, parse_trigger, plan_shape, sort_order, watermark_warning)
from .probe import probe
from .progress import Progress
from .query import Query, QueryInfo
from .remote import Target, resolve
from .rows import Rows, fetch
from .server import UI_READERS, LocalServer

if TYPE_CHECKING:  # pragma: no cover
    from .monitor import Monitor
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession

KEEPALIVE_SECONDS = 300.0
RETRIES = 3  # after 0.2, 0.4 and 0.8 s
BATCH_RECORD_EVERY = 5.0  # seconds between catalog writes of a query's last batch id
CLOSE_DEADLINE = 10.0  # seconds for close() in all: listener, stopping queries, releasing
CHECK_DEADLINE = 5.0
# Set in every session sparkscope opens: a session id the server does not know comes back without it.
SESSION_MARKER = "sparkscope.session.opened"
_SINK_NAMES = (("MemorySink", "memory"), ("ForeachBatchSink", "foreach_batch"), ("ConsoleTable", "console"),
               ("FileSink", "file"))


def resolve_target(remote: str | None = None, *, token: str | None = None, profile: str | None = None,
                   session_id: str | None = None, start_server: bool = True,
                   server_home: Path | None = None,
                   on_server_wait: Callable[[float, str], None] | None = None, port: int | None = None) -> Target:
    """The endpoint to use; starts (or reuses) the embedded local server when nothing is configured
    (on `port`, or 15002 or the next free port after it)."""
    target = resolve(remote, profile=profile, token=token, session_id=session_id)
    server = LocalServer(server_home)
    if target is not None:
        if target.token is None and target.on_this_machine:
            # our own embedded server, named by URL: its token is in our state dir (like Jupyter's)
            info = server.running()
            if info is not None and info.port == target.port and info.token:
                target = replace(target, host="localhost", token=info.token, token_source="state")
        return target
    info = server.running()
    if info is not None and port is not None and info.port != port:
        raise ConfigError(f"The local server already runs on port {info.port}, not {port}",
                          "Leave out --port, or stop it first: sparkscope server stop")
    if info is None:
        if not start_server:
            raise ConfigError("No remote is configured and the local server is not running",
                              "Start it with: sparkscope server start")
        _import_pyspark_meanwhile()
        info = server.start(port=port, on_wait=on_server_wait, token=token)
    return info.target(token).with_session(session_id)


def _import_pyspark_meanwhile() -> None:
    """Import pyspark's Connect client (a second of pandas, pyarrow and gRPC) while the server starts,
    instead of after it answers. Python's import locks make the session's own import wait for it."""
    import importlib
    import threading

    def load() -> None:
        with swallowed("importing pyspark ahead of the session"):
            importlib.import_module("pyspark.sql.connect.session")

    threading.Thread(target=load, name="sparkscope-import", daemon=True).start()


def connect(remote: str | None = None, *, token: str | None = None, profile: str | None = None,
            session_id: str | None = None, start_server: bool = True, timeout: float = 5.0,
            server_home: Path | None = None, keepalive: float = KEEPALIVE_SECONDS,
            ca_file: str | None = None) -> Session:
    """Connect to Spark: `remote` URL > SPARK_REMOTE > profile > the embedded local server.

    `ca_file`: a PEM file of the CAs to trust for TLS (`;use_ssl=true`), instead of the profile's
    `ca_file` or gRPC's default roots. Fails within `timeout` seconds when the server cannot be reached.
    """
    target = resolve_target(remote, token=token, profile=profile, session_id=session_id,
                            start_server=start_server, server_home=server_home)
    if ca_file:
        target = replace(target, ca_file=ca_file)
    return Session.open(target, timeout=timeout, keepalive=keepalive, server_home=server_home)


def retry_policies() -> list[Any]:
    """pyspark's default policy retries an unavailable server for about 20 minutes; an interactive
    tool gives up after 1.4 s. It must still be pyspark's DefaultPolicy (the base RetryPolicy
    retries nothing): a call that meets a connection the network just cut fails with UNAVAILABLE
    ("Stream removed") and succeeds when retried on a new one."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    return [DefaultPolicy(max_retries=RETRIES, initial_backoff=200, max_backoff=1000, backoff_multiplier=2.0,
                          jitter=0, max_server_retry_delay=1000)]


class Session:
    """A connection to one Spark Connect session. `spark` is the real pyspark SparkSession."""

    def __init__(self, spark: SparkSession, target: Target, server_version: str,
                 keepalive: float = KEEPALIVE_SECONDS):
        from .sources import Sources

        self.spark = spark
        self.target = target
        self.server_version = server_version
        self.source = Sources(spark, same_machine=target.on_this_machine, server_version=server_version)
        self._queries: dict[str, Query] = {}
        self._started_here: set[str] = set()  # ids of the queries this process started (not found)
        self._lock = threading.RLock()
        self._closed = False
        self._checkpoint_root: str | None = None
        self._stop_keepalive = threading.Event()
        self._monitor: Monitor | None = None
        self.catalog = Catalog()
        self._batch_recorded: dict[str, float] = {}
        self._stop_explaining: Callable[[], None] = lambda: None
        self.server_home: Path | None = None  # the state dir of the embedded server it talks to
        if keepalive > 0:
            threading.Thread(target=self._keepalive, args=(keepalive,), name="sparkscope-keepalive",
                             daemon=True).start()
        if target.session_id:
            self._adopt_active()

    @classmethod
    def open(cls, target: Target, *, timeout: float = 5.0, keepalive: float = KEEPALIVE_SECONDS,
             activate: bool = True, server_home: Path | None = None) -> Session:
        """Open (or, with target.session_id, rejoin) a session. `activate`: make it the session pyspark's
        own helpers use (DDL parsing); off for sessions only looked into."""
        version = probe(target, timeout=timeout)
        # pyspark.sql.functions dispatches to the Connect implementation only when this is set.
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        with translated():
            spark = session_builder(target.url(with_token=True), target.root_certificates()).create()
        spark.client.set_retry_policies(retry_policies())
        session = cls(spark, target.with_session(session_id(spark)), version, keepalive)
        session.server_home = server_home
        try:
            if target.session_id and not session._known_to_server():
                session.close(stop_queries=True)  # the server made a new, empty session: release it
                raise ConnectionFailed(
                    f"The server has no session {target.session_id} (it was closed, timed out, or the server "
                    "restarted)", "Connect without session_id to open a new session", code="session_unknown",
                    data={"session_id": str(target.session_id)})
            with contextlib.suppress(SparkscopeError):  # a server that refuses unknown keys still works
                call(spark.conf.set, SESSION_MARKER, str(int(time.time())))
            with swallowed("recording the session in the catalog"):
                session.catalog.record_session(session.url, session.session_id)
            if activate:
                make_active(spark)
            if target.source == "local" or target.token_source == "state":  # the embedded server
                session._stop_explaining = explain_unreachable(LocalServer(server_home).out_of_memory_exit)
        except BaseException:
            session._stop_keepalive.set()
            raise
        return session

    @classmethod
    def reattach(cls, target: Target, *, timeout: float = 5.0) -> Session:
        """Rejoin the most recent session this client opened on the server whose queries still run
        (after a crash of the REPL or a script: no id to copy)."""
        return durable.reattach(target, timeout=timeout)

    def activate(self) -> None:
        """Make this the session pyspark's getActiveSession() returns in the calling thread (and the
        default one in every thread)."""
        make_active(self.spark)

    def spark_ui(self) -> str | None:
        """Where the Spark UI is and who can read it, for the embedded server (None for another one)."""
        if not self.target.on_this_machine:
            return None
        info = LocalServer(self.server_home).running()
        if info is None or info.port != self.target.port:
            return None
        return f"{info.ui_url}: {UI_READERS}" if info.ui_url else "off (sparkscope server start --ui turns it on)"

    def explain_restart(self, error: SparkscopeError) -> SparkscopeError:
        """`error`; or, when the embedded server was stopped and started again under this session (its state
        dir holds the new server's token), the error that says so. The new server refuses the old token, and
        until the channel's reconnect backoff ends the call may not even reach it: either way the user gave
        no token, and this session and its queries are gone from the new server."""
        if not isinstance(error, (AuthenticationFailed, ServerUnreachable)) or self.target.token_source != "state":
            return error
        info = LocalServer(self.server_home).running()
        if info is None or info.port != self.target.port or info.token == self.target.token:
            return error
        return ConnectionFailed("The local server was restarted (it has a new token), so this session and its "
                                "queries are gone from it", "Open a new session with sparkscope.connect()",
                                code="server_restarted")

    def _known_to_server(self) -> bool:
        """Whether this session existed before we attached: our marker, or queries of its own."""
        if call(self.spark.conf.get, SESSION_MARKER, None):
            return True
        return bool(self._queries)

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

    # -- identity -------------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return str(self.target.session_id)

    @property
    def user(self) -> str | None:
        """The user name the server sees (SPARK_USER or USER on this machine)."""
        return user_id(self.spark)

    @property
    def url(self) -> str:
        """The server URL with the token hidden."""
        return self.target.with_session(None).display

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<sparkscope.Session {self.url} session_id={self.session_id}>"

    # -- starting -------------------------------------------------------------------------------
    @property
    def checkpoint_root(self) -> str | None:
        if self._checkpoint_root is None:
            value = call(self.spark.conf.get, "spark.sql.streaming.checkpointLocation", "")
            self._checkpoint_root = value or ""
        return self._checkpoint_root or None

    def start(self, df: DataFrame, name: str, sink: str | None = None, *, mode: str | None = None,
              trigger: str | None = None, checkpoint: str | None = None, path: str | None = None,
              table: str | None = None, options: dict[str, Any] | None = None,
              foreach_batch: Callable[[Any, int], None] | None = None, keep: str | int | None = None) -> Query:
        """Start `df` as a query named `name`; the output mode is inferred.

        Without a sink, an append or update stream goes to the bounded sink, which keeps the newest
        `keep` rows ('10000', '50k', '10m', '10m,50000'; 10,000 rows by default), and a complete-mode
        aggregation to Spark's memory sink, which holds one result. `sink="memory"` is Spark's memory
        sink, which keeps every row."""
        check_name(name)
        if foreach_batch is not None:
            sink = "foreach_batch"
        if keep is not None and sink not in (None, BOUNDED):
            raise ConfigError(f"Only the bounded sink keeps a number of rows, not the {sink} sink",
                              "Leave out the sink, or keep", code="keep_needs_bounded")
        retention = parse_keep(keep)
        if sink is not None:
            check_sink(sink)
        parsed_trigger = parse_trigger(trigger)
        if not hasattr(df, "writeStream"):
            raise ConfigError(f"{type(df).__name__} is not a DataFrame", "Pass a streaming DataFrame")
        existing = self._find_active_by_name(name)
        if existing is not None:
            raise ConfigError(f"A query named '{name}' is already running",
                              f"Stop it first (ss.query('{name}').stop()) or pick another name",
                              code="query_exists", data={"name": name})
        if sink in FILE_SINKS and not path:
            raise ConfigError(f"A {sink} sink needs a path", "Pass path=…", code="needs_path", data={"sink": sink})
        path = for_server(path, self.target.on_this_machine) if path else path
        checkpoint = for_server(checkpoint, self.target.on_this_machine) if checkpoint else checkpoint
        if sink == "table":
            table = table or name
        if not call(lambda: df.isStreaming):
            raise UnsupportedOperation("This is a batch DataFrame, not a streaming one",
                                       "Build it from spark.readStream or ss.source.*")
        shape = plan_shape(call(explain_string, df, extended=True))
        chosen = choose_mode(shape, sink or BOUNDED, mode)
        sink = sink or (BOUNDED if keep is not None else default_sink(chosen, parsed_trigger))
        if sink == BOUNDED and parsed_trigger.kind == "continuous":
            raise UnsupportedOperation("Continuous processing cannot write to the bounded sink (it has no "
                                       "foreachBatch)", "Leave out keep (Spark's memory sink is used), or use "
                                       "a processing-time trigger", code="continuous_bounded")
        warning = " ".join(w for w in (watermark_warning(shape), memory_sink_warning(sink, chosen, parsed_trigger))
                           if w) or None
        plan, problem = durable.replay_check(self.spark, df, sink)
        return self._launch(df, name, sink, chosen, parsed_trigger, checkpoint=checkpoint, path=path, table=table,
                            options=options, foreach_batch=foreach_batch, warning=warning, plan=plan,
                            problem=problem, retention=retention if sink == BOUNDED else None)

    def _launch(self, df: DataFrame, name: str, sink: str, chosen: str, parsed_trigger: Trigger, *,
                checkpoint: str | None, path: str | None, table: str | None, options: dict[str, Any] | None,
                foreach_batch: Callable[[Any, int], None] | None = None, warning: str | None = None,
                plan: bytes | None = None, problem: str | None = None,
                retention: Retention | None = None) -> Query:
        """Start a checked query and record it in the catalog."""
        self._check_not_running_elsewhere(name)
        view = None
        if sink == BOUNDED:
            self._drop_old_view(name)
            view = bounded_sink.view_name(name)
            with translated():
                foreach_batch = bounded_sink.prepare(self.spark, df, name, view, retention or Retention(), chosen)
        if checkpoint is None:
            checkpoint = self.fresh_checkpoint(name)
        writer = df.writeStream.queryName(name).outputMode(chosen)
        if parsed_trigger.kind != "default":
            writer = writer.trigger(**parsed_trigger.writer_kwargs())
        if checkpoint:
            writer = writer.option("checkpointLocation", checkpoint)
        for key, value in (options or {}).items():
            writer = writer.option(key, value)
        with translated():
            if sink == "table":
                handle = writer.toTable(table or name)
            elif sink in ("foreach_batch", BOUNDED) and foreach_batch is not None:
                handle = writer.foreachBatch(foreach_batch).start()
            elif sink in FILE_SINKS:
                handle = writer.format(sink).start(path)
            else:
                handle = writer.format(sink).start()
        query = Query(handle, name=name, sink=sink, mode=chosen, trigger=parsed_trigger, checkpoint=checkpoint,
                      path=path, table=table, fmt=sink if sink in FILE_SINKS else None, warning=warning,
                      keep=retention if sink == BOUNDED else None, view=view)
        return self._register(query, plan=plan, problem=problem, options=options)

    def _check_not_running_elsewhere(self, name: str) -> None:
        """The catalog keeps one record per server and name, and `:restart NAME` / `--restore` bring back
        that one: a second session's query of a name that runs in another session would take its record,
        so it is refused while the first runs (Spark itself allows it: names are per session)."""
        def other() -> Record | None:
            try:
                record = self.catalog.get(self.url, name)
            except CatalogError:  # the start goes on; recording it will say that the catalog failed
                return None
            mine = record is None or record.session_id in (None, self.session_id)
            return None if mine or record is None or record.state != ACTIVE else record

        if other() is None:
            return
        self.lost_queries()  # a session that is gone, or no longer runs it, frees the name
        record = other()
        if record is not None:
            when = time.strftime("%H:%M", time.localtime(record.started_at))
            raise ConfigError(f"A query named '{name}' is running in another session ({str(record.session_id)[:8]}, "
                              f"started by {record.started_by} at {when})",
                              "Pick another name, or stop it in that session first", code="query_in_other_session",
                              data={"name": name})

    def fresh_checkpoint(self, name: str) -> str | None:
        """A new folder under the server's checkpoint root for a query named `name` (None without a root).
        Left to itself Spark uses <root>/<name>, so a later query of the same name would resume (or fail
        on) an unrelated query's offsets and state."""
        root = self.checkpoint_root
        return f"{root.rstrip('/')}/{name}-{uuid.uuid4().hex[:8]}" if root else None

    def record_started(self, handle: Any, df: DataFrame, *, sink: str, mode: str, trigger: str | None,
                       checkpoint: str | None, options: dict[str, Any], path: str | None = None,
                       table: str | None = None) -> Query:
        """A query that code of this process started with pyspark's own writeStream…start(): known to
        this session as started here, and recorded in the catalog so that it can be restarted."""
        plan, problem = durable.replay_check(self.spark, df, sink)
        name = handle.name or handle.id[:8]
        try:
            parsed = parse_trigger(trigger)
        except ConfigError:  # an interval Spark took and sparkscope does not spell: recorded as default
            parsed = parse_trigger(None)
        query = Query(handle, name=name, sink=sink, mode=mode or "append", trigger=parsed,
                      checkpoint=checkpoint, path=path, table=table, fmt=sink if sink in FILE_SINKS else None)
        try:  # it runs already (Spark allows one name per session): it only must not take the other's record
            self._check_not_running_elsewhere(name)
        except ConfigError as exc:
            log.warning("%s is not recorded in the catalog, so it cannot be restarted from it: %s", name, exc.message)
            return self._register(query, plan=plan, problem=exc.message, options=options, record=False)
        return self._register(query, plan=plan, problem=problem, options=options)

    def _register(self, query: Query, *, plan: bytes | None, problem: str | None,
                  options: dict[str, Any] | None, record: bool = True) -> Query:
        """Track a query this process started, and record it in the catalog (unless `record` is off)."""
        name, sink, checkpoint, path, table = query.name, query.sink, query.checkpoint, query.path, query.table
        query.on_end = self._ended
        query.restart_note = problem
        with self._lock:
            self._queries[query.id] = query
            self._started_here.add(query.id)
        if not record:
            return query
        try:
            self.catalog.record_start(self.url, name, query_id=query.id, session_id=self.session_id, plan=plan,
                                      sink=sink, mode=query.mode, trigger=str(query.trigger),
                                      options=dict(options or {}),
                                      path=path, table_name=table, checkpoint=checkpoint,
                                      restartable=problem is None, reason=problem,
                                      keep=query.keep.spec() if query.keep else None, view=query.view)
        except Exception as exc:  # the query runs; that it cannot come back is said, never swallowed
            log.debug("recording %s in the catalog failed", name, exc_info=True)
            problem = query.restart_note = (f"recording it in the catalog {self.catalog.path} failed "
                                            f"({translate(exc).message})")
        if problem:  # a library does not print: Query.restart_note says it, and the REPL shows it
            log.info("%s cannot be restarted from the catalog: %s", name, problem)
        return query

    def _drop_old_view(self, name: str) -> None:
        """An earlier run's rows of a bounded query (global views outlive sessions): gone when the name
        starts again."""
        views = {q.view for q in self.known_queries() if q.name == name and q.view}
        with swallowed("reading the catalog"):
            record = self.catalog.get(self.url, name)
            if record is not None and record.view:
                views.add(record.view)
        for view in views:
            with swallowed(f"dropping the view {view}"):
                bounded_sink.drop(self.spark, view)

    def _drop_views(self, running_too: bool) -> None:
        """The rows kept by this session's bounded queries that ended (and, if asked, of running ones)."""
        running = set() if running_too else {q.id for q in self.running()}
        for query in self.known_queries():
            if query.view and query.id not in running:
                with swallowed(f"dropping the view {query.view}"):
                    bounded_sink.drop(self.spark, query.view)

    def forget(self, name: str, *, delete_checkpoint: bool = False) -> Record:
        """Remove a stopped, failed or lost query from the catalog; its checkpoint stays unless asked."""
        return durable.forget(self, name, delete_checkpoint=delete_checkpoint)

    def idle_timeout(self) -> tuple[float, bool]:
        """(seconds, known): how long the server keeps this session, and its queries, once no client
        calls it; assumed to be Spark's default 60 minutes when the server does not say."""
        return durable.idle_timeout(self)

    def lost_queries(self) -> list[Record]:
        """Catalogued queries recorded as running that no longer run because their session is gone from
        the server (restarted, or timed out): marked lost, and returned. One RPC per other session."""
        return durable.find_lost(self)

    def _ended(self, query: Query, state: str, error: str | None) -> None:
        with swallowed(f"recording the end of {query.name} in the catalog"):
            self.catalog.record_end(self.url, query.name, state, error, query_id=query.id)
            last = query.progress
            if last is not None:
                self.catalog.record_batch(self.url, query.id, last.batch_id)

    def _on_monitor_event(self, event: Any) -> None:
        """Keep the catalog's last batch (at most every few seconds per query) and endings current."""
        if event.kind == "progress" and event.progress is not None and event.query_id:
            now = time.monotonic()
            if now - self._batch_recorded.get(event.query_id, 0.0) >= BATCH_RECORD_EVERY:
                self._batch_recorded[event.query_id] = now
                with swallowed("recording a batch in the catalog"):
                    self.catalog.record_batch(self.url, event.query_id, event.progress.batch_id)
        elif event.kind == "terminated" and event.query_id:
            with self._lock:
                query = self._queries.get(event.query_id)
            if query is not None:
                with swallowed("recording the end of a query in the catalog"):
                    self.catalog.record_end(self.url, query.name, FAILED if event.error else STOPPED,
                                            event.error.splitlines()[0][:300] if event.error else None,
                                            query_id=query.id)

    # -- the catalog: restarting, and what was lost ---------------------------------------------
    def restart(self, name: str, *, fresh: bool = False) -> Query:
        """Start a catalogued query again from its recorded plan, sink and checkpoint, so it continues
        where its last committed batch ended (`fresh`: with a new checkpoint; the old one is kept)."""
        record = self.catalog.get(self.url, name)
        if record is None:
            raise QueryNotFound(f"No query named '{name}' in the catalog of {self.url}",
                                "See what it holds with ss.catalog_records()", code="not_in_catalog",
                                data={"name": name})
        running = self._find_active_by_name(name)
        if running is not None:
            raise ConfigError(f"{name} is already running (id {running.id[:8]})", "Nothing was changed",
                              code="already_running", data={"name": name})
        if not record.restartable or record.plan is None:
            raise UnsupportedOperation(f"{name} cannot be restarted: {record.reason or 'its plan was not kept'}",
                                       "Build the DataFrame again and start it", code="not_restartable",
                                       data={"name": name})
        if record.sink == "memory" and record.mode != "complete" and not fresh:
            # Spark refuses to recover a memory sink from its checkpoint outside complete mode (its rows
            # lived in the old run's driver memory anyway): such a query starts over
            log.info("%s writes to a memory sink in %s mode, which Spark cannot recover from a checkpoint: "
                        "it starts over with a new one", name, record.mode)
            fresh = True
        # checked when it first started: the plan, its mode and sink are not analysed again
        return self._launch(dataframe_from_plan(self.spark, record.plan), name, record.sink, record.mode,
                            parse_trigger(record.trigger), checkpoint=None if fresh else record.checkpoint,
                            path=record.path, table=record.table_name, options=record.options, plan=record.plan,
                            retention=parse_keep(record.keep) if record.sink == BOUNDED else None)

    def catalog_records(self) -> list[Record]:
        """This server's catalog, after marking the queries that are gone from the server as lost."""
        self.lost_queries()
        return self.catalog.records(self.url)

    # -- looking up -----------------------------------------------------------------------------
    def _adopt_active(self) -> list[Query]:
        """Register queries running in this session that sparkscope did not start (user code, reattach)."""
        active = call(lambda: self.spark.streams.active)
        with self._lock:
            for handle in active:
                known = self._queries.get(handle.id)
                if known is None or known.run_id != handle.runId:  # new, or restarted from its checkpoint
                    query = self._adopted(handle)
                    query.on_end = self._ended
                    self._queries[handle.id] = query
            active_ids = {h.id for h in active}
        return [q for q in self._queries.values() if q.id in active_ids]

    def _adopted(self, handle: Any) -> Query:
        """A Query for a running handle this process did not start: what the catalog recorded of it
        (sink, mode, trigger, checkpoint, path) when it is there."""
        name = handle.name or handle.id[:8]
        record = None
        with swallowed("reading the catalog"):
            record = self.catalog.get(self.url, name)
        if record is None or record.query_id != handle.id:
            return Query(handle, name=name, sink=_sink_of(handle))
        return Query(handle, name=name, sink=record.sink, mode=record.mode, trigger=parse_trigger(record.trigger),
                     checkpoint=record.checkpoint, path=record.path, table=record.table_name,
                     fmt=record.sink if record.sink in FILE_SINKS else None,
                     keep=parse_keep(record.keep) if record.sink == BOUNDED else None, view=record.view)

    def _find_active_by_name(self, name: str) -> Query | None:
        for query in self._adopt_active():
            if query.name == name:
                return query
        return None

    def query(self, name_or_id: str | Query) -> Query:
        """Find a query by name, id, or unique id prefix (active ones first)."""
        if isinstance(name_or_id, Query):
            return name_or_id
        key = str(name_or_id)
        active = self._adopt_active()
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

    def _live_monitor(self) -> Monitor | None:
        """The monitor, while its event stream is heard from; None means: ask the server."""
        monitor = self._monitor
        if monitor is None or monitor.mode != "listener" or monitor.silent:
            return None
        return monitor

    def queries(self, all: bool = False) -> list[QueryInfo]:  # noqa: A002 - the word users expect
        """Every query of this session: active ones and those that stopped or failed (until reset).

        One RPC lists the active queries; their last progress comes from the monitor when it is
        listening (no RPC), otherwise one lastProgress call each. With `all`, the catalog's other
        queries of this server follow: stopped, failed and lost ones, from earlier sessions too.
        """
        active = {q.id for q in self._adopt_active()}
        with self._lock:
            known = list(self._queries.values())
        monitor = self._live_monitor()
        infos = []
        for query in known:
            track = monitor.track(query.id) if monitor and query.id in active else None
            infos.append(query.info(active=query.id in active, latest=track.latest if track else None))
        if all:
            shown = {info.name for info in infos}
            for record in self.catalog_records():
                if record.name not in shown:
                    infos.append(QueryInfo(name=record.name, id=record.query_id or "", state=record.state,
                                           sink=record.sink, mode=record.mode, trigger=record.trigger,
                                           last_batch=record.last_batch, input_rows_per_second=0.0,
                                           processed_rows_per_second=0.0, error=record.error or record.reason,
                                           checkpoint=record.checkpoint))
        return infos

    def running(self) -> list[Query]:
        """This session's active queries (one RPC), including ones sparkscope did not start."""
        return self._adopt_active()

    def started_here(self, query: Query) -> bool:
        """Whether this process started `query` (not found it: reattached, or another client's)."""
        return query.id in self._started_here

    def known_queries(self) -> list[Query]:
        """The queries this process knows of in this session, without an RPC (for completion, alerts)."""
        with self._lock:
            return list(self._queries.values())

    def recent_progress(self, query: Query, last: int | None = None) -> list[Progress]:
        """The progress of the query's last `last` batches (or of its latest one): from the monitor when
        it listens (no RPC), otherwise one call to the server."""
        monitor = self._live_monitor()
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
    def stop_all(self) -> list[str]:
        stopped = []
        for query in self._adopt_active():
            query.stop()
            stopped.append(query.name)
        return stopped

    def await_any_termination(self, timeout: float | None = None) -> bool:
        with translated():
            if timeout is None:
                self.spark.streams.awaitAnyTermination()
                return True
            return bool(self.spark.streams.awaitAnyTermination(int(max(1, round(timeout)))))

    def reset_terminated(self) -> int:
        """Forget stopped and failed queries; returns how many were forgotten."""
        call(self.spark.streams.resetTerminated)
        active_ids = {q.id for q in self._adopt_active()}
        with self._lock:
            gone = [qid for qid in self._queries if qid not in active_ids]
            for qid in gone:
                del self._queries[qid]
        return len(gone)

    @property
    def monitor(self) -> Monitor:
        """Live progress of every query of this session, pushed by a listener (started on first use)."""
        from .monitor import Monitor

        with self._lock:
            if self._monitor is None:
                self._monitor = Monitor(self)
                self._monitor.subscribe(self._on_monitor_event)
            monitor = self._monitor
        # not under the session's lock: the monitor's first look at the running queries needs it
        return monitor.start()

    # -- reading --------------------------------------------------------------------------------
    def sink_dataframe(self, name_or_query: str | Query) -> DataFrame:
        """A batch DataFrame over what a query wrote (memory table, file path or table)."""
        try:
            query = self.query(name_or_query)
        except QueryNotFound:
            if isinstance(name_or_query, Query):
                raise
            name = str(name_or_query)
            df = self.spark.table(name)
            try:
                df.schema  # noqa: B018
            except Exception as exc:
                error = translate(exc)
                if error.error_class and error.error_class.startswith("TABLE_OR_VIEW_NOT_FOUND"):
                    raise QueryNotFound(f"No query or table named '{name}'",
                                        "List them with ss.queries(), or start one with ss.start(df, name)",
                                        code="no_query_or_table", data={"name": name}) from exc
                raise error from exc
            return df
        if query.sink == "memory":
            return self.spark.table(query.name)
        if query.sink == BOUNDED and query.view:
            return bounded_sink.rows_of(self.spark, query.view)
        if query.sink == "table":
            return self.spark.table(query.table or query.name)
        if query.sink in FILE_SINKS and query.path:
            return self.spark.read.format(query.format or query.sink).load(query.path)
        raise UnsupportedOperation(f"Query {query.name} writes to a {query.sink} sink, which cannot be read back",
                                   "Start it with the default sink to peek at its rows")

    def peek(self, name_or_query: str | Query, n: int = 20, where: str | None = None,
             order_by: str | list[str] | None = None) -> Rows:
        """Up to `n` rows of a query's sink; the filter, order and limit run on the server."""
        if int(n) < 0:
            raise ConfigError(f"Cannot show {n} rows", "Pass a row count of 0 or more")
        df = self.sink_dataframe(name_or_query)
        with translated():
            if where:
                df = df.where(where)
            if order_by:
                keys = [key for spec in ([order_by] if isinstance(order_by, str) else order_by)
                        for key in sort_order(spec)]
                df = df.orderBy(*[df[name].desc() if descending else df[name] for name, descending in keys])
            return fetch(df, int(n))

    @staticmethod
    def is_dataframe(value: Any) -> bool:
        """Whether `value` is a Spark Connect DataFrame."""
        from pyspark.sql.connect.dataframe import DataFrame

        return isinstance(value, DataFrame)

    def explain(self, df: DataFrame, extended: bool = False) -> str:
        """The plan of a DataFrame, as DataFrame.explain() would print it."""
        return str(call(explain_string, df, extended=extended))

    def sql(self, statement: str, n: int = 1000) -> Rows:
        """Run batch SQL and fetch up to `n` rows."""
        def run() -> Rows:
            df = self.spark.sql(statement)
            if df.isStreaming:
                raise UnsupportedOperation("This SQL reads a stream", "Start it with ss.start(spark.sql(…), NAME)",
                                           code="sql_is_streaming")
            return fetch(df, n)

        return call(run)

    # -- cancellation -------------------------------------------------------------------------
    @contextlib.contextmanager
    def operation(self, tag: str | None = None) -> Iterator[str]:
        """Tag the RPCs this thread makes, so `cancel(tag)` can interrupt just them."""
        tag = tag or f"sparkscope-{uuid.uuid4().hex[:12]}"
        self.spark.addTag(tag)
        try:
            yield tag
        finally:
            self.spark.removeTag(tag)

    def cancel(self, tag: str) -> list[str]:
        """Interrupt the operations with this tag (never interruptAll: it would stop streaming queries)."""
        try:
            return list(self.spark.interruptTag(tag))
        except Exception:
            log.debug("could not interrupt the operations tagged %s", tag, exc_info=True)
            return []

    # -- closing --------------------------------------------------------------------------------
    def _keepalive(self, every: float) -> None:
        while not self._stop_keepalive.wait(every):
            with swallowed("keeping the session alive"):
                self.spark.version  # noqa: B018 - one cheap RPC keeps the server session alive

    def close(self, stop_queries: bool = True) -> None:
        """Stop this session's queries and release it; with stop_queries=False leave both running.

        Within CLOSE_DEADLINE seconds in all, also on a frozen network: once a step gets no answer,
        the server is not answering, and the remaining calls are abandoned instead of each waiting."""
        if self._closed:
            return
        self._closed = True
        self._stop_keepalive.set()
        self._stop_explaining()
        deadline = time.monotonic() + CLOSE_DEADLINE
        answered = self._monitor.close(timeout=CLOSE_DEADLINE / 2) if self._monitor is not None else True
        if not stop_queries:
            keep_session_on_close(self.spark)
        steps: list[tuple[Callable[[], object], str]] = (
            [(self.stop_all, "stopping the session's queries")] if stop_queries else [])
        if any(q.view for q in self.known_queries()):
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


def _sink_of(handle: Any) -> str:
    try:
        last = handle.lastProgress
    except Exception:
        log.debug("could not read the sink of query %s", handle.id, exc_info=True)
        return "unknown"
    if last is None:
        return "unknown"
    description = str(last.sink.description)
    for marker, sink in _SINK_NAMES:
        if marker in description:
            return sink
    return description.split("[")[0] or "unknown"
