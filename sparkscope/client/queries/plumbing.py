"""`ss.client`: what the front ends (the REPL, the notebook) build on, as pyspark's `spark.client` is the plumbing
of a SparkSession. A script needs none of it: the Session's own verbs (start, peek, state, sql, …) are the API.

Its verbs are the ones the Session does not have: a query's sink as a DataFrame, the RPCs of one thread tagged and
interrupted, and a query started by pyspark's own writeStream…start() recorded as sparkscope's.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..logs import log

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..errors import SparkscopeError

    from .query import Query
    from .sink_reading import SinkReader
    from .starting import CheckpointUser, QueryStarter


class SessionClient:
    """The plumbing of a Session that the REPL and the notebook build on: reading a query's sink as a DataFrame,
    tagging and interrupting what a thread runs, recording a query pyspark's own writeStream started, and what the
    session knows of an error's cause."""

    def __init__(self, spark: Any, sinks: SinkReader, starter: QueryStarter, *,
                 explain_error: Callable[[SparkscopeError], SparkscopeError],
                 inherits_listener: Callable[[], bool]) -> None:
        self._spark = spark
        self._sinks = sinks
        self._starter = starter
        self._explain_error = explain_error
        self._inherits_listener = inherits_listener

    # -- what the session knows ----------------------------------------------------------------------
    def explain_error(self, error: SparkscopeError) -> SparkscopeError:
        """`error`, or what the session knows of its cause: the embedded server restarted under it, ran out of
        memory, or a Python worker could not start on a server whose Python lacks what it needs."""
        return self._explain_error(error)

    @property
    def inherits_listener(self) -> bool:
        """The session was rejoined with no live process of this machine holding it (its client crashed, or ended
        without closing it): a live-event listener the server keeps for it is the gone client's, and is replaced
        (the server keeps one per session, and refuses another)."""
        return self._inherits_listener()

    # -- what queries wrote, as DataFrames ------------------------------------------------------
    def sink_dataframe(self, name_or_query: str | Query) -> DataFrame:
        """A batch DataFrame over what a query wrote (its rows, memory table, file path or table), or a table's."""
        return self._sinks.sink_dataframe(name_or_query)

    def batch_dataframe(self, query: Query, batch_id: int) -> DataFrame:
        """The rows one batch of a bounded query wrote, while its sink keeps them."""
        return self._sinks.batch_dataframe(query, batch_id)

    def query_plan(self, name: str) -> str:
        """The extended plan of query `name`: a running one's own, else the plan the catalog recorded."""
        return self._sinks.query_plan(name)

    # -- what a thread runs ---------------------------------------------------------------------
    @contextlib.contextmanager
    def operation(self, tag: str | None = None) -> Iterator[str]:
        """Tag the RPCs this thread makes, so `cancel(tag)` can interrupt just them."""
        tag = tag or f"sparkscope-{uuid.uuid4().hex[:12]}"
        spark = self._spark  # the session may be closed meanwhile (:connect in the tagged command)
        spark.addTag(tag)
        try:
            yield tag
        finally:
            spark.removeTag(tag)

    def cancel(self, tag: str) -> list[str]:
        """Interrupt the operations with this tag (never interruptAll: it would stop streaming queries)."""
        try:
            return list(self._spark.interruptTag(tag))
        except Exception:
            log.debug("could not interrupt the operations tagged %s", tag, exc_info=True)
            return []

    # -- queries pyspark's own writeStream started ----------------------------------------------
    def fresh_checkpoint(self, name: str) -> str | None:
        """A new folder under the server's checkpoint root for a query named `name` (None without a root)."""
        return self._starter.fresh_checkpoint(name)

    def on_checkpoint(self, checkpoint: str | None) -> list[CheckpointUser]:
        """The queries running now on `checkpoint`, in this session and in the others the catalog records."""
        return self._starter.on_checkpoint(checkpoint)

    def record_started(self, handle: Any, df: DataFrame, *, sink: str, mode: str, trigger: str | None,
                       checkpoint: str | None, options: dict[str, Any], path: str | None = None,
                       table: str | None = None, checkpoint_users: list[CheckpointUser] | None = None) -> Query:
        """A query that code of this process started with writeStream…start(): known to the session and recorded
        in the catalog, as one ss.start started."""
        return self._starter.record_started(handle, df, sink=sink, mode=mode, trigger=trigger, checkpoint=checkpoint,
                                            options=options, path=path, table=table,
                                            checkpoint_users=checkpoint_users)
