"""Starting queries through a Session: checks, the sink, the catalog record, and restarting a recorded one."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog import durable
from . import bounded_sink, event_time
from ..connection.capabilities import ADD_PACKAGES
from .._pyspark import dataframe_from_plan, explain_string, foreach_jvm_writer, own_calls, plan_fields
from ..catalog.records import ACTIVE, LOST, STOPPED, Record
from .. import delete_guard
from ..catalog.checkpoints import (Resumption, clear_cut_off_first_batch, committed_batch, made_by_sparkscope,
                                   make_fresh)
from ..kafka.connector import is_kafka, reads_own_source
from ..errors import CatalogError, ConfigError, SparkscopeError, UnsupportedOperation
from ..error_reading import call, translate, translated
from ..logs import log, swallowed
from ..paths import for_server
from .planning import (BOUNDED, FILE_SINKS, Retention, Trigger, check_name, check_sink, choose_mode, default_sink,
                       memory_sink_warning, parse_keep, parse_trigger, plan_shape, watermark_warning)
from .query import Query
from .dataframes import is_dataframe

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from .owner import OwningSession
    from .tracking import QueryManager


# one foreachBatch start at a time in this process (QueryStarter._start_foreach_batch)
_FOREACH_BATCH_STARTS = threading.Lock()


def not_a_dataframe(value: Any) -> ConfigError:
    """What ss.start says of a value that is not a Spark DataFrame: its full type, and how to get one."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    name = kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    if module == "pandas":
        return ConfigError(f"This is a {name}, not a Spark DataFrame",
                           "Start a streaming DataFrame, e.g. spark.readStream…; spark.createDataFrame(pdf) makes a "
                           "batch one from pandas", code="not_a_dataframe")
    return ConfigError(f"This is a {name}, not a Spark DataFrame", "Pass a streaming DataFrame (spark.readStream…)",
                       code="not_a_dataframe")


def _check_sources_here(record: Record) -> None:
    """The folders a recorded file query reads, on this machine, are there: a restart of a query whose source folder
    was deleted got Spark's "Option 'basePath' not found"."""
    for field, value in plan_fields(record.plan or b""):
        if field == "paths" and value and "://" not in value:
            folder = value.removeprefix("file:")
            while any(c in folder for c in "*?[{"):  # a glob: the folder it lies in must be there
                folder = os.path.dirname(folder)
            if folder and not os.path.exists(folder):
                raise UnsupportedOperation(f"{record.name} reads {value}, which is gone: the files of its next "
                                           "batches (and of the last one, if Spark reads it again) are not there",
                                           "Put the folder back, or start a new query on the data that is there",
                                           code="source_gone", data={"name": record.name, "path": value})


def _check_bounded_options(sink: str | None, keep: object, grace: object) -> None:
    """keep and grace are the bounded sink's: refused with any other sink."""
    if keep is not None and sink not in (None, BOUNDED):
        raise ConfigError(f"Only the bounded sink takes keep, not the {sink} sink", "Leave out the sink, or keep",
                          code="keep_needs_bounded")
    if grace is not None and sink not in (None, BOUNDED):
        raise ConfigError(f"Only the bounded sink takes grace, not the {sink} sink",
                          "Leave out the sink, or grace", code="grace_needs_bounded")


@dataclass(frozen=True)
class CheckpointUser:
    """A query running on a checkpoint just before another query started on it."""

    name: str
    query_id: str
    session_id: str | None = None  # None: this session
    started: str | None = None  # another session's: who started it and when ("ana at 04:41"), from the catalog


def _same_checkpoint(a: str, b: str) -> bool:
    return a.rstrip("/").removeprefix("file:") == b.rstrip("/").removeprefix("file:")


def took_over_note(user: CheckpointUser, query: Query) -> str:
    """What a start that took `user`'s checkpoint says: Spark stopped that query, without a word to either
    session (spark.sql.streaming.stopActiveRunOnRestart)."""
    where = "" if user.session_id is None else f" in session {user.session_id[:8]} (started by {user.started})"
    stopped = (f"the earlier run of {user.name}{where}" if user.name == query.name
               else f"query {user.name}{where}")
    return (f"Spark stopped {stopped} as this query started: both use the checkpoint {query.checkpoint}, and Spark "
            "runs one query per checkpoint. Give each query a checkpointLocation of its own")


class QueryStarter:
    """Starting queries for a Session, and starting catalogued ones again. Internal: its verbs are the Session's
    (ss.start, ss.restart, ss.restart_lost) and the front ends' plumbing (ss.client)."""

    def __init__(self, session: OwningSession, book: QueryManager, sink: bounded_sink.BoundedSink) -> None:
        self._s = session
        self._book = book
        self._sink = sink

    def start(self, df: DataFrame, name: str, sink: str | None = None, *, mode: str | None = None,
              trigger: str | None = None, checkpoint: str | None = None, path: str | None = None,
              table: str | None = None, options: dict[str, Any] | None = None,
              foreach_batch: Callable[[Any, int], None] | None = None, keep: str | int | None = None,
              grace: str | float | None = None) -> Query:
        """Start `df` as a query named `name`; the output mode is inferred.

        Without a sink, an append or update stream goes to the bounded sink, which keeps the newest
        `keep` rows ('10000', '50k', '10m', '10m,50000'; 10,000 rows by default), and a complete-mode
        aggregation to Spark's memory sink, which holds one result. `sink="memory"` is Spark's memory
        sink, which keeps every row. `grace` ('5m', '30s'): how long the bounded sink's rows outlive the
        query on the server (the server's spark.sparkscope.grace by default: 15 minutes)."""
        check_name(name)
        if foreach_batch is not None:
            sink = "foreach_batch"
        _check_bounded_options(sink, keep, grace)
        retention = parse_keep(keep, grace)
        if sink is not None:
            check_sink(sink)
        parsed_trigger = parse_trigger(trigger)
        if not is_dataframe(df):
            raise not_a_dataframe(df)
        if sink in FILE_SINKS and not path:
            raise ConfigError(f"A {sink} sink needs a path", "Pass path=…", code="needs_path", data={"sink": sink})
        streaming, explained = self._ask_about(df)
        self._check_name_free(name)
        path = for_server(path, self._s.server.target.on_this_machine) if path else path
        checkpoint = for_server(checkpoint, self._s.server.target.on_this_machine) if checkpoint else checkpoint
        if sink == "table":
            table = table or name
        if not streaming.result():
            raise UnsupportedOperation("This is a batch DataFrame, not a streaming one",
                                       "Build it from spark.readStream or ss.source.*")
        shape = plan_shape(explained.result())
        if parsed_trigger.kind == "realtime":  # what it needs, said before the start: never a start that hangs
            self._check_realtime(df, sink or BOUNDED, mode, shape, parsed_trigger)
            mode = mode or "update"
        chosen = choose_mode(shape, sink or BOUNDED, mode)
        sink = sink or (BOUNDED if keep is not None or grace is not None else default_sink(chosen, parsed_trigger))
        if sink == BOUNDED and parsed_trigger.kind == "continuous":
            raise UnsupportedOperation("Continuous processing cannot write to the bounded sink (it has no "
                                       "foreachBatch)", "Leave out keep (Spark's memory sink is used), or use "
                                       "a processing-time trigger", code="continuous_bounded")
        notes: list[str] = []
        if sink == "foreach_batch":
            self._check_python_sink()
        grows = memory_sink_warning(sink, chosen, parsed_trigger)
        warning = " ".join(w for w in (watermark_warning(shape), grows) if w) or None
        if checkpoint is None and self._s.server.checkpoint_root() is None and self._s.server.facts.first_time("no_checkpoint_root"):
            notes.append("no checkpoint: the server has no spark.sql.streaming.checkpointLocation, so this query "
                         "cannot be restarted and its state cannot be read; give it one (--checkpoint PATH, or "
                         "checkpoint=… in ss.start), or set that conf on the server")
        plan, problem = durable.replay_check(self._s.spark, df, sink)
        replaced = self._resumable_record(name)
        if replaced is not None:
            notes.append(replaced)
        return self._launch(df, name, sink, chosen, parsed_trigger, checkpoint=checkpoint, path=path, table=table,
                            options=options, foreach_batch=foreach_batch, warning=warning, plan=plan,
                            problem=problem, retention=retention if sink == BOUNDED else None, notes=notes)

    def _check_realtime(self, df: DataFrame, sink: str, mode: str | None, shape: Any, trigger: Trigger) -> None:
        """One line, before the start, naming what a real-time query lacks (queries/realtime.py)."""
        from .._pyspark import client_version, plan_bytes
        from . import realtime

        fields = plan_fields(call(plan_bytes, df))
        options = dict(_option_pairs(fields))
        sources = tuple(value for name, value in fields if name == "format" and value)
        server = self._s.server
        master = _master(self._s.spark)
        slots = _task_slots(master)
        needs = realtime.Needs(server=server.version, client=client_version(), sources=sources,
                               connector=any(is_kafka(fmt) for fmt in sources) and server.kafka.has_connector(),
                               sink=sink, mode=mode, shape=shape, batch_seconds=trigger.seconds or 0.0,
                               partitions=_partitions(options), slots=slots,
                               tasks_in_driver=None if master is None else master.startswith("local"))
        found = realtime.problem(needs)
        if found is not None:
            raise UnsupportedOperation(found[0], found[1], code="realtime_needs")

    @staticmethod
    def _ask_about(df: DataFrame) -> tuple[Future[bool], Future[str]]:
        """What a start asks the server of its DataFrame (is it a stream, its plan, its schema, which pyspark keeps),
        asked at once while the start looks at the running queries: three round trips in the time of one. The
        caller waits for each answer; a failure is raised, translated, when it is read."""
        pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="sparkscope-start")
        try:
            streaming = pool.submit(call, lambda: df.isStreaming)
            explained = pool.submit(call, explain_string, df, extended=True)
            pool.submit(call, lambda: df.schema)  # kept by the DataFrame: the bounded sink's start reads it
        finally:
            pool.shutdown(wait=False)
        return streaming, explained

    def _resumable_record(self, name: str) -> str | None:
        """What a new start of `name` says when the catalog holds a stopped `name` that could have resumed: its
        record is replaced, and its checkpoint (with its state) stays, no longer the one :restart brings back."""
        try:
            record = self._s.catalog.get(self._s.url, name)
        except CatalogError:
            return None
        if record is None or record.state == ACTIVE or not record.restartable or not record.checkpoint:
            return None
        after = (committed_batch(record.checkpoint) if self._s.server.target.on_this_machine else record.last_batch)
        if after is None:
            return None
        return (f"the catalog's record of the earlier {name}, stopped after batch {after}, is replaced by this query, "
                f"which starts afresh: its checkpoint {record.checkpoint} stays, with its state. Restarting a stopped "
                f"query (ss.restart('{name}')), not starting it anew, resumes it from its checkpoint")

    def _check_name_free(self, name: str) -> None:
        """No query of this session runs under `name`, nor under a name that differs from it only in case."""
        running = self._book.find_active_by_name(name, ignore_case=True)  # one look at what runs
        if running is not None and running.name == name:
            raise ConfigError(f"A query named '{name}' is already running",
                              f"Stop it first (ss.streams.stop('{name}')) or pick another name",
                              code="query_exists", data={"name": name})
        if running is not None:  # Spark's names of tables and views ignore case: both would read one view
            raise ConfigError(f"A query named '{running.name}' is running, and '{name}' differs from it only in "
                              "case: SQL and spark.table() would name both alike", "Pick a name that differs in "
                              "more than case", code="query_name_case", data={"name": name, "running": running.name})

    def _check_python_sink(self) -> None:
        """foreach_batch runs Python on the server: one line naming what the server lacks, when it cannot."""
        problem = self._s.server.facts.get().foreach_batch_problem()
        if problem is not None:
            raise UnsupportedOperation(f"foreach_batch runs Python on the server, and this server cannot: {problem}",
                                       f"Leave out the sink (the bounded sink runs no Python there), or {ADD_PACKAGES}",
                                       code="server_lacks_python", data={"problem": problem})

    def _launch(self, df: DataFrame, name: str, sink: str, chosen: str, parsed_trigger: Trigger, *,
                checkpoint: str | None, path: str | None, table: str | None, options: dict[str, Any] | None,
                foreach_batch: Callable[[Any, int], None] | None = None, warning: str | None = None,
                plan: bytes | None = None, problem: str | None = None,
                retention: Retention | None = None, notes: list[str] | None = None) -> Query:
        """Start a checked query and record it in the catalog."""
        with self._s.catalog.starting(self._s.url, name):
            return self._launch_here(df, name, sink, chosen, parsed_trigger, checkpoint=checkpoint, path=path,
                                     table=table, options=options, foreach_batch=foreach_batch, warning=warning,
                                     plan=plan, problem=problem, retention=retention, notes=notes)

    def _launch_here(self, df: DataFrame, name: str, sink: str, chosen: str, parsed_trigger: Trigger, *,
                     checkpoint: str | None, path: str | None, table: str | None, options: dict[str, Any] | None,
                     foreach_batch: Callable[[Any, int], None] | None, warning: str | None, plan: bytes | None,
                     problem: str | None, retention: Retention | None, notes: list[str] | None) -> Query:
        self._check_not_running_elsewhere(name)
        if checkpoint is None:
            checkpoint = self.fresh_checkpoint(name)
        view = None
        sink_options: dict[str, str] = {}
        latency: str | None = None  # why the sink cannot measure the query's latency
        reads_kafka = plan is not None and any(key == "format" and is_kafka(value) for key, value in plan_fields(plan))
        if sink == BOUNDED and reads_kafka and plan is not None:
            df, latency = self._carrying_event_time(df, plan)
        writer = df.writeStream.queryName(name).outputMode(chosen)
        if sink == BOUNDED:
            self.drop_old_view(name)
            view = bounded_sink.view_name(name)
            prepared = self._sink.prepare(df, name, view, retention or Retention(), chosen,
                                          scratch_checkpoint=checkpoint is None,
                                          realtime=parsed_trigger.kind == "realtime")
            sink_options = prepared.sink_options
            if prepared.writer_packet is not None:
                writer = foreach_jvm_writer(writer, prepared.writer_packet)
            if prepared.scratch_checkpoint:  # the ring's own, on the server: it goes with the ring
                writer = writer.option("checkpointLocation", prepared.scratch_checkpoint)
        if parsed_trigger.kind != "default":
            writer = writer.trigger(**parsed_trigger.writer_kwargs())
        if checkpoint:
            writer = writer.option("checkpointLocation", checkpoint)
        for key, value in (options or {}).items():
            writer = writer.option(key, value)
        users = self.on_checkpoint(checkpoint)
        try:
            handle = self._start_writer(writer, sink, path=path, table=table or name, options=options,
                                        sink_options=sink_options, foreach_batch=foreach_batch)
        except BaseException:  # Ctrl-C, or a start Spark refused: no query, so no checkpoint this start made
            self._discard_unused(checkpoint)
            if view is not None:  # nor its ring (with the checkpoint the ring made), nor the view on it
                with swallowed(f"dropping the view {view}"):
                    self._sink.discard(name, view)
            raise
        query = Query(handle, name=name, sink=sink, mode=chosen, trigger=parsed_trigger, checkpoint=checkpoint,
                      path=path, table=table, fmt=sink if sink in FILE_SINKS else None, warning=warning,
                      keep=retention if sink == BOUNDED else None, view=view)
        query.notes.extend(notes or [])
        if latency is not None:
            query.notes.append(f"no latency: {latency}")
        if sink == "kafka" or reads_kafka:
            query.notes.append(self._s.server.kafka.describe())
        self.register(query, plan=plan, problem=problem, options=options, checkpoint_users=users)
        if view is not None and parsed_trigger.kind == "realtime":  # started once it reads: what comes next shows
            with translated():  # (registered first: a Ctrl-C here leaves a query the catalog knows)
                if not self._sink.wait_reading(view, lambda: query.is_active):
                    log.info("%s: its real-time writers did not start within %gs", name, bounded_sink.READING_WITHIN)
        return query

    def _carrying_event_time(self, df: DataFrame, plan: bytes) -> tuple[DataFrame, str | None]:
        """`df` rewritten so that each record's Kafka timestamp reaches the bounded sink, which then measures the
        query's end-to-end latency (event_time.py); else `df` as it is, and why not."""
        carried = event_time.carry(plan)
        if carried.plan is None:
            return df, ("sparkscope measures a Kafka query's latency where its plan passes each record on, and "
                        f"{carried.why_not}")
        rewritten = dataframe_from_plan(self._s.spark, carried.plan)
        try:
            with translated():
                names = rewritten.schema.names
        except SparkscopeError as refused:  # a plan the server reads otherwise than the rewrite expects
            log.info("the plan carrying the event time was refused: %s", refused)
            return df, "the server refused its plan with sparkscope's timestamp column"
        if names[-1:] != [event_time.EVENT_COLUMN] or names.count(event_time.EVENT_COLUMN) != 1:
            return df, "its output does not keep sparkscope's timestamp column"
        return rewritten, None

    def _start_writer(self, writer: Any, sink: str, *, path: str | None, table: str, options: dict[str, Any] | None,
                      sink_options: dict[str, str], foreach_batch: Callable[[Any, int], None] | None) -> Any:
        with translated(), own_calls():
            if sink == "table":
                return writer.toTable(table)
            if sink == BOUNDED and not sink_options:  # a real-time query's: its foreach writer fills the ring
                return writer.start()
            if sink == BOUNDED:
                return writer.format(bounded_sink.SINK_CLASS).options(**sink_options).start()
            if sink == "foreach_batch" and foreach_batch is not None:
                return self._start_foreach_batch(writer, foreach_batch)
            if sink in FILE_SINKS:
                return writer.format(sink).start(path)
            if sink == "kafka":
                self._s.server.kafka.remember(options or {})
                return writer.format(self._s.server.kafka.format()).start()
            return writer.format(sink).start()

    def _discard_unused(self, checkpoint: str | None) -> None:
        """The checkpoint folder a start made for a query that then did not start, when Spark wrote nothing in it:
        gone, so that no folder lists a query that never ran (a checkpoint the user gave is never touched)."""
        if not checkpoint or not made_by_sparkscope(checkpoint, self._s.server.checkpoint_root()):
            return
        folder = checkpoint.removeprefix("file:")
        if any(os.path.exists(os.path.join(folder, written)) for written in ("offsets", "commits", "metadata")):
            return
        with swallowed(f"removing the unused checkpoint {folder}"):
            delete_guard.remove_tree(folder)

    def _start_foreach_batch(self, writer: Any, function: Callable[[Any, int], None]) -> Any:
        """writer.foreachBatch(function).start(), one at a time in this process, and once more when the worker did not
        connect back although the server's Python can run it. The server starts the query's Python worker inside
        the start call and gives it 10 s to connect back; starts made at once share the CPU for their workers'
        imports, and on a busy 2-core machine all of them failed (8 of 8). The failed start left no query behind."""
        for attempt in (1, 2):
            with _FOREACH_BATCH_STARTS:
                try:
                    return writer.foreachBatch(function).start()
                except Exception as exc:
                    if (attempt == 2 or translate(exc).code != "python_worker_failed"
                            or self._s.server.facts.get().foreach_batch_problem() is not None):
                        raise
                    log.info("the server's Python worker did not connect back in time (a busy server): "
                             "starting the query once more")
        raise AssertionError("unreachable")  # pragma: no cover

    def _check_not_running_elsewhere(self, name: str) -> None:
        """The catalog keeps one record per server and name, and `:restart NAME` / `--restore` bring back
        that one: a second session's query of a name that runs in another session would take its record,
        so it is refused while the first runs (Spark itself allows it: names are per session)."""
        def other() -> Record | None:
            try:
                record = self._s.catalog.get(self._s.url, name)
            except CatalogError:  # the start goes on; recording it will say that the catalog failed
                return None
            mine = record is None or record.session_id in (None, self._s.session_id)
            return None if mine or record is None or record.state != ACTIVE else record

        if other() is None:
            return
        self._book.lost_queries()  # a session that is gone, or no longer runs it, frees the name
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
        root = self._s.server.checkpoint_root()
        if not root:
            return None
        path = f"{root.rstrip('/')}/{name}-{uuid.uuid4().hex[:8]}"
        if self._s.server.embedded():  # its files are this machine's: made here, marked as sparkscope's
            with translated():
                make_fresh(path, name)
        return path

    def on_checkpoint(self, checkpoint: str | None) -> list[CheckpointUser]:
        """The queries running now on `checkpoint`: this session's that this process knows, and those the catalog
        records in other sessions of this server (asked of the server only when one is recorded on it). Spark
        stops them when a query starts on it, and says so only in its own log."""
        if not checkpoint:
            return []
        users: list[CheckpointUser] = []
        mine = [q for q in self._book.known_queries()
                if q.checkpoint and _same_checkpoint(q.checkpoint, checkpoint) and q.known_state() is None]
        if mine:
            with swallowed("listing the session's running queries"):
                running = {handle.runId for handle in self._s.spark.streams.active}
                users += [CheckpointUser(q.name, q.id) for q in mine if q.run_id in running]
        with swallowed("reading the catalog for queries on the same checkpoint"):
            for record in self._s.catalog.records(self._s.url):
                if (record.state == ACTIVE and record.session_id not in (None, self._s.session_id)
                        and record.query_id and record.checkpoint
                        and _same_checkpoint(record.checkpoint, checkpoint)
                        and record.query_id in (self._book.running_in(record.session_id) or set())):
                    when = time.strftime("%H:%M", time.localtime(record.started_at))
                    users.append(CheckpointUser(record.name, record.query_id, record.session_id,
                                                f"{record.started_by} at {when}"))
        return users

    def record_started(self, handle: Any, df: DataFrame, *, sink: str, mode: str, trigger: str | None,
                       checkpoint: str | None, options: dict[str, Any], path: str | None = None,
                       table: str | None = None, checkpoint_users: list[CheckpointUser] | None = None) -> Query:
        """A query that code of this process started with pyspark's own writeStream…start(): known to
        this session as started here, and recorded in the catalog so that it can be restarted.
        `checkpoint_users`: on_checkpoint(checkpoint) just before it started; a query Spark stopped for
        it is said as a warning (pyspark's start has no notes to show)."""
        plan, problem = durable.replay_check(self._s.spark, df, sink)
        name = handle.name or handle.id[:8]
        try:
            parsed = parse_trigger(trigger)
        except ConfigError:  # an interval Spark took and sparkscope does not spell: recorded as default
            parsed = parse_trigger(None)
        query = Query(handle, name=name, sink=sink, mode=mode or "append", trigger=parsed,
                      checkpoint=checkpoint, path=path, table=table, fmt=sink if sink in FILE_SINKS else None)
        recorded = True
        try:  # it runs already (Spark allows one name per session): it only must not take the other's record
            self._check_not_running_elsewhere(name)
        except ConfigError as exc:
            log.warning("%s is not recorded in the catalog, so it cannot be restarted from it: %s", name, exc.message)
            problem, recorded = exc.message, False
        self.register(query, plan=plan, problem=problem, options=options, record=recorded,
                      checkpoint_users=checkpoint_users)
        for note in query.notes:  # pyspark's start has no notes to show: each is a warning
            log.warning("%s", note)
        if recorded and query.restart_note:  # nor a note of why it cannot come back: said once, here
            log.info("%s cannot be restarted from the catalog: %s", name, query.restart_note)
        return query

    def register(self, query: Query, *, plan: bytes | None, problem: str | None,
                 options: dict[str, Any] | None, record: bool = True,
                 checkpoint_users: list[CheckpointUser] | None = None) -> Query:
        """Track a query this process started, and record it in the catalog (unless `record` is off).
        `checkpoint_users`: who ran on its checkpoint as it started; those Spark stopped for it are noted,
        and another session's is recorded as stopped."""
        self._took_over(query, checkpoint_users or [])
        name, sink, checkpoint, path, table = query.name, query.sink, query.checkpoint, query.path, query.table
        query.on_end = self._book.ended
        query.restart_note = problem
        query.files_here = self._s.server.target.on_this_machine
        self._book.add(query, started_here=True)
        if not record:
            return query
        try:
            self._s.catalog.record_start(self._s.url, name, query_id=query.id, session_id=self._s.session_id, plan=plan,
                                      sink=sink, mode=query.mode, trigger=str(query.trigger),
                                      options=dict(options or {}),
                                      path=path, table_name=table, checkpoint=checkpoint,
                                      restartable=problem is None, reason=problem,
                                      keep=query.keep.spec() if query.keep else None, view=query.view)
        except Exception as exc:  # the query runs; that it cannot come back is said, never swallowed
            log.debug("recording %s in the catalog failed", name, exc_info=True)
            problem = query.restart_note = (f"recording it in the catalog {self._s.catalog.path} failed "
                                            f"({translate(exc).message})")
        self._ended_before_registered(query)
        if problem:  # a library does not print: Query.restart_note says it, and the REPL shows it
            log.debug("%s cannot be restarted from the catalog: %s", name, problem)
        return query

    def _took_over(self, query: Query, users: list[CheckpointUser]) -> None:
        for user in users:
            if user.query_id != query.id:  # not stopped by this start: a checkpoint Spark gives its own id
                continue
            query.notes.append(took_over_note(user, query))
            if user.session_id is not None:  # its own session hears of the end, if a process still holds it
                with swallowed(f"recording the end of {user.name} in the catalog"):
                    self._s.catalog.record_end(self._s.url, user.name, STOPPED, None, query_id=user.query_id)

    def _ended_before_registered(self, query: Query) -> None:
        """A query that fails as it starts (a checkpoint it cannot read) can end before this process registers
        it: its end was heard when there was no query to record it for, and the record just written says it
        runs. When the monitor heard it end, Spark is asked (one RPC), and reading its state records its end."""
        track = self._book.track(query.id)
        if track is not None and track.id == query.id and track.state != "active":
            with swallowed(f"checking whether {query.name} ended as it started"):
                query.state  # noqa: B018 - reading it records a query's end in the catalog (Query.on_end)

    def drop_old_view(self, name: str) -> None:
        """An earlier run's rows of a bounded query (global views outlive sessions): gone when the name
        starts again."""
        views = {q.view for q in self._book.known_queries() if q.name == name and q.view}
        with swallowed("reading the catalog"):
            record = self._s.catalog.get(self._s.url, name)
            if record is not None and record.view:
                views.add(record.view)
        for view in views:
            with swallowed(f"dropping the view {view}"):
                self._sink.drop(view)

    def drop_views(self, running_too: bool) -> None:
        """The rows kept by this session's bounded queries that ended (and, if asked, of running ones)."""
        running = set() if running_too else {q.id for q in self._book.running()}
        for query in self._book.known_queries():
            if query.view and query.id not in running:
                with swallowed(f"dropping the view {query.view}"):
                    self._sink.drop(query.view)

    def restart(self, name: str, *, fresh: bool = False) -> Query:
        """Start a catalogued query again from its recorded plan, sink and checkpoint, so it continues
        where its last committed batch ended (`fresh`: with a new checkpoint; the old one is kept)."""
        record = self._s.catalog.require(self._s.url, name)
        running = self._book.find_active_by_name(name)
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
        if reads_own_source(record.plan):
            with translated():
                self._s.server.kafka.register()
        checkpoint = None if fresh else record.checkpoint
        if checkpoint is None:
            resumption = Resumption(None, None, True)
        elif self._s.server.target.on_this_machine:
            resumption = Resumption(checkpoint, committed_batch(checkpoint), True)
            self._remake_if_ours(checkpoint, name)
            if not self.on_checkpoint(checkpoint):  # a query running on it may be writing its first batch right now
                with swallowed(f"clearing the cut-off first batch of {name}"):
                    if cleared := clear_cut_off_first_batch(checkpoint):
                        log.info("%s: its first batch was cut off as it was written; removed %s", name, cleared)
            _check_sources_here(record)
        else:
            resumption = Resumption(checkpoint, record.last_batch, False)
        # checked when it first started: the plan, its mode and sink are not analysed again
        query = self._launch(dataframe_from_plan(self._s.spark, record.plan), name, record.sink, record.mode,
                             parse_trigger(record.trigger), checkpoint=checkpoint,
                             path=record.path, table=record.table_name, options=record.options, plan=record.plan,
                             retention=parse_keep(record.keep) if record.sink == BOUNDED else None)
        query.resumption = resumption if query.checkpoint == checkpoint else Resumption(None, None, True)
        return query

    def _remake_if_ours(self, checkpoint: str, name: str) -> None:
        """A checkpoint sparkscope made for `name` (named as fresh_checkpoint names them) that was deleted since: made
        again with its marker, so that it stays sparkscope's to prune (Spark would make a bare folder)."""
        root = self._s.server.checkpoint_root()
        folder = checkpoint.removeprefix("file:")
        if (root and self._s.server.embedded() and not os.path.exists(folder)
                and os.path.dirname(folder.rstrip("/")) == root.removeprefix("file:").rstrip("/")
                and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{8}}", os.path.basename(folder.rstrip("/")))):
            with swallowed(f"making the checkpoint folder {folder} again"):
                make_fresh(folder, name)

    def restart_lost(self, skip: list[str] | None = None) -> list[tuple[Record, Query | SparkscopeError]]:
        """Start again, from their checkpoints, the catalogued queries of this server that were lost (after
        marking those that are gone from it), but those named in `skip`; each with its new Query, or the error
        that kept it back."""
        self._book.lost_queries()
        restarted: list[tuple[Record, Query | SparkscopeError]] = []
        for record in [r for r in self._s.catalog.records(self._s.url) if r.state == LOST and r.name not in (skip or ())]:
            try:
                restarted.append((record, self.restart(record.name)))
            except SparkscopeError as exc:
                restarted.append((record, exc))
        return restarted


def _option_pairs(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (key, value) entries of a plan's option maps, as plan_fields lists them (a key, then its value)."""
    return [(key.lower(), value) for (name, key), (next_name, value) in zip(fields, fields[1:], strict=False)
            if name == "key" and next_name == "value"]


def _partitions(options: dict[str, str]) -> dict[str, int] | None:
    """The partitions of each topic a Kafka read subscribes to, asked of its cluster; None when it cannot be asked
    (no cluster named, a pattern or assignment, the broker's client library missing, the cluster not answering)."""
    bootstrap, subscribed = options.get("kafka.bootstrap.servers"), options.get("subscribe")
    if not bootstrap or not subscribed:
        return None
    try:
        from ..kafka.broker import topics

        wanted = {name.strip() for name in subscribed.split(",") if name.strip()}
        return {info.name: len(info.partitions) for info in topics(bootstrap) if info.name in wanted} or None
    except Exception:  # the check is a courtesy: Spark still says what it says
        log.debug("could not count the partitions of %s", subscribed, exc_info=True)
        return None


def _master(spark: Any) -> str | None:
    """The server's spark.master; None when it does not say."""
    try:
        return str(call(spark.conf.get, "spark.master", "") or "").strip() or None
    except SparkscopeError:
        return None


def _task_slots(master: str | None) -> int | None:
    """The task slots of a server in local mode (local[N]); None where they cannot be told from here."""
    found = re.fullmatch(r"local\[(\d+)(,\d+)?\]", master or "")
    return int(found.group(1)) if found else (1 if master == "local" else None)

