"""Reading through a Session: a query's sink rows, batch SQL, plans and state (the Session's reading verbs)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from . import bounded_sink
from .._pyspark import explain_string
from ..errors import ConfigError, QueryNotFound, SparkscopeError, UnsupportedOperation
from ..error_reading import call, translate, translated
from .planning import BOUNDED, FILE_SINKS, sort_order
from .query import Query
from .._pyspark.arrow import fetch, fetch_at_most
from ..rows import Rows

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..monitoring.lateness import Lateness
    from .owner import OwningSession
    from .tracking import QueryManager


class SinkReader:
    """Reading through a Session: a query's sink rows, batch SQL, plans and state. Internal: its verbs are the
    Session's (ss.peek, ss.state, ss.sql, …) and the front ends' plumbing (ss.client)."""

    def __init__(self, session: OwningSession, book: QueryManager, sink: bounded_sink.BoundedSink) -> None:
        self._s = session
        self._book = book
        self._sink = sink

    def sink_dataframe(self, name_or_query: str | Query) -> DataFrame:
        """A batch DataFrame over what a query wrote (memory table, file path or table). A query this process knows
        is read with no RPC before the read itself (a :peek is one round trip)."""
        try:
            known = self._book.known_by_name(name_or_query) if isinstance(name_or_query, str) else None
            query = known or self._book.get(name_or_query)
        except QueryNotFound:
            if isinstance(name_or_query, Query):
                raise
            name = str(name_or_query)
            kept = self._kept_elsewhere(name)
            if kept is not None:
                return kept
            df = self._s.spark.table(name)
            try:
                df.schema  # noqa: B018
            except Exception as exc:
                error = translate(exc)
                # a name no table can have ('my query', 'a-b') does not parse as one: it names no query either
                if error.error_class and error.error_class.startswith(("TABLE_OR_VIEW_NOT_FOUND", "PARSE_SYNTAX_ERROR",
                                                                       "INVALID_IDENTIFIER")):
                    raise QueryNotFound(f"No query or table named '{name}'",
                                        "List them with ss.streams.queries(), or start one with ss.start(df, name)",
                                        code="no_query_or_table", data={"name": name}) from exc
                raise error from exc
            return df
        if query.sink == "memory":
            return self._s.spark.table(query.name)
        if query.sink == BOUNDED and query.view:
            if self._book.known_by_name(query.name) is query:  # the newest run: the temporary view named after it
                return self._s.spark.table(query.name)  # reads its ring, the source resolved once, at its start
            return self._sink.rows(query.view)
        if query.sink == "table":
            return self._s.spark.table(query.table or query.name)
        if query.sink in FILE_SINKS and query.path:
            return self._s.spark.read.format(query.format or query.sink).load(query.path)
        raise UnsupportedOperation(f"Query {query.name} writes to a {query.sink} sink, which cannot be read back",
                                   "Start it with the default sink to peek at its rows")

    def _kept_elsewhere(self, name: str) -> DataFrame | None:
        """The rows a bounded query of another session of this server keeps (a second REPL's :peek), from the ring
        the catalog recorded for it: the server lets this user read its own rings from any session."""
        record = None
        with contextlib.suppress(Exception):  # an unreadable catalog: the name is looked up as a table instead
            record = self._s.catalog.get(self._s.url, name)
        if record is None or record.sink != BOUNDED or not record.view:
            return None
        return self._sink.rows(record.view)

    def batch_dataframe(self, query: Query, batch_id: int) -> DataFrame:
        """The rows one batch of a bounded query wrote, while its sink keeps them."""
        if query.sink != BOUNDED or not query.view:
            raise UnsupportedOperation(f"{query.name} writes to a {query.sink} sink, whose rows are not kept by batch",
                                       "Read its sink with ss.peek")
        return self._sink.batch(query.view, batch_id)

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
                from pyspark.sql.functions import col

                keys = [key for spec in ([order_by] if isinstance(order_by, str) else order_by)
                        for key in sort_order(spec)]
                columns = df.columns
                known = {c.lower() for c in columns}
                missing = [name for name, _ in keys if name.lower() not in known
                           and name.split(".")[0].lower() not in known]  # a struct's field: its column
                if missing:
                    raise ConfigError(f"No column {', '.join(missing)} to order by; the columns: {', '.join(columns)}",
                                      "Order by one of them", code="no_such_column")
                df = df.orderBy(*[col(name).desc() if descending else col(name) for name, descending in keys])
            return fetch(df, int(n))

    def query_plan(self, name: str) -> str:
        """The extended plan of query `name`: a running one's own (once it ran a batch), else the plan the catalog
        recorded."""
        from .._pyspark import dataframe_from_plan

        try:
            query = self._book.get(name)
            if query.state == "active":
                explained = query.explain(extended=True)
                if "Logical Plan ==" in explained:  # before its first batch Spark explains none: the recorded one
                    return explained
        except QueryNotFound:
            pass
        record = self._s.catalog.require(self._s.url, name)
        if record.plan is None:
            raise UnsupportedOperation(f"The plan of {name} was not kept", "Start it again to see its plan",
                                       code="no_plan", data={"name": name})
        return self.explain(dataframe_from_plan(self._s.spark, record.plan), extended=True)

    def late(self, name: str) -> Lateness:
        """The watermark of query `name` and its late rows: a running one's from its progress, a stopped or lost
        one's from what its checkpoint holds (when its files are on this machine)."""
        from ..monitoring.lateness import judged, watermark_specs
        from ..monitoring.progress import batches_run

        try:
            query = self._book.get(name)
            name, history = query.name, batches_run(self._book.monitor.history(query.id) or query.history)
        except QueryNotFound:  # stopped or lost in another session: what the catalog and its checkpoint say
            history = []
        specs = watermark_specs(self.query_plan(name))
        if not specs:
            raise UnsupportedOperation(f"{name} has no watermark, so no row is ever late for it",
                                       "Add withWatermark(\"eventTime\", \"10 minutes\") before its aggregation or "
                                       "join", code="no_watermark", data={"name": name})
        ran = any(p.watermark and not p.watermark.startswith("1970") for p in history)
        return judged(name, specs, history, None if ran else self._checkpoint_watermark(name))

    def _checkpoint_watermark(self, name: str) -> Any:
        """The watermark in the checkpoint of `name`, when its files are on this machine; else None."""
        from ..catalog.checkpoints import checkpoint_watermark
        from ..state.store import checkpoint_of

        if not self._s.server.target.on_this_machine:
            return None
        try:
            _, checkpoint = checkpoint_of(self._s, name)
        except SparkscopeError:
            return None
        return checkpoint_watermark(checkpoint)

    # -- state ----------------------------------------------------------------------------------
    def state(self, name: str, *, batch: int | None = None, operator: int | None = None, store: str | None = None,
              variable: str | None = None, timers: bool = False) -> DataFrame:
        """What a stateful operator of query `name` holds, from its checkpoint (after its newest batch, or
        `batch`), keys and values as columns; `timers`: the timers a transformWithState query has registered.
        Works on running, stopped, failed and lost queries."""
        from ..state.store import read_state

        return read_state(self._s, name, batch=batch, operator=operator, store=store, variable=variable, timers=timers)

    def state_changes(self, name: str, *, start: int | None = None, end: int | None = None,
                      operator: int | None = None, store: str | None = None,
                      variable: str | None = None) -> DataFrame:
        """How the state of `name` changed, batch by batch: change type, key, old and new value."""
        from ..state.store import state_changes

        return state_changes(self._s, name, start=start, end=end, operator=operator, store=store, variable=variable)

    def state_info(self, name: str) -> Any:
        """The stateful operators of `name`: (StateOf, [(operator, schema, rows and bytes per partition)])."""
        from ..state.store import state_info

        return state_info(self._s, name)

    def explain(self, df: DataFrame, extended: bool = False) -> str:
        """The plan of a DataFrame, as DataFrame.explain() would print it."""
        return str(call(explain_string, df, extended=extended))

    def sql(self, statement: str, limit: int | None = 1000) -> Rows:
        """Run batch SQL and fetch at most `limit` rows (None: all), saying when there were more."""
        def run() -> Rows:
            df = self._s.spark.sql(statement)
            if df.isStreaming:
                raise UnsupportedOperation("This SQL reads a stream", "Start it with ss.start(spark.sql(…), NAME)",
                                           code="sql_is_streaming")
            return fetch_at_most(df, limit)

        return call(run)
