"""sparkscope's default sink for append and update streams: the newest rows only, newest first.

Spark's memory sink keeps every row a query ever wrote in the driver's heap, so reading it slows by the
minute and, on a long run, the server runs out of memory. The bounded sink is a foreachBatch function
(so it needs no jar on the server): the server's Python worker for the query keeps the newest rows as
Arrow tables, at most `Retention.rows` of them and, if asked, only those of the last `Retention.seconds`,
and after each batch replaces a global temporary view holding exactly those rows. A temporary view named
after the query, in the session that started it, selects the query's own columns from it, so
`spark.table(name)` and SQL read it as they would a memory sink's table.

Each row also carries the batch that wrote it (BATCH_COLUMN), so a tail reads exactly one batch.
The rows live in the worker (and the view) only: after a restart the query goes on from its checkpoint,
and what it keeps starts again from its next batch.
"""

from __future__ import annotations

import uuid
from typing import Any

from .planning import Retention

BATCH_COLUMN = "__sparkscope_batch"


class KeepNewest:
    """The foreachBatch function. Pickled by value (see `writer`): it runs in the server's Python worker,
    where sparkscope is not installed, so it uses only pyspark and pyarrow, imported inside."""

    def __init__(self, view: str, rows: int, seconds: float | None, replace: bool):
        self.view = view
        self.rows = rows
        self.seconds = seconds
        self.replace = replace  # complete mode: every batch is the whole result
        self.chunks: list[tuple[float, int, Any]] = []  # (arrival time, batch id, pyarrow.Table), newest first
        self.schema: Any = None
        self.clock: Any = None  # time.time unless a test says otherwise

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        import os
        import sys
        import time

        import pyarrow as pa
        from pyspark.sql.types import LongType, StructField, StructType

        if self.schema is None:
            # pyspark's worker prints two lines per batch to the server's log: on a long run, megabytes a day
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of this worker process
            self.schema = StructType([*batch_df.schema.fields, StructField(BATCH_COLUMN, LongType(), False)])
        now = (self.clock or time.time)()
        # Every partition of the batch must be computed: a stateful query commits its state per partition
        # (Spark fails the batch when one is missing), and the progress counts the rows read. So the batch
        # is cached and counted, then the newest rows are taken from the cache.
        batch_df.persist()
        try:
            batch_df.count()
            new = batch_df.limit(self.rows).toArrow()
        finally:
            batch_df.unpersist()
        older = [] if self.replace else [chunk for chunk in self.chunks if chunk[1] != batch_id]  # a retried batch
        expired = self.seconds is not None and any(now - chunk[0] > self.seconds for chunk in older)
        if new.num_rows == 0 and not expired and not self.replace:
            return  # nothing changed: the view already holds what is kept
        new = new.append_column(BATCH_COLUMN, pa.array([batch_id] * new.num_rows, pa.int64()))
        kept, total = [], 0
        for arrived, batch, table in [(now, batch_id, new), *older]:
            if total >= self.rows or (self.seconds is not None and now - arrived > self.seconds):
                break
            table = table.slice(0, self.rows - total)
            kept.append((arrived, batch, table))
            total += table.num_rows
        self.chunks = kept
        tables = [table for _, _, table in kept if table.num_rows]
        rows = pa.concat_tables(tables) if tables else new.slice(0, 0)
        batch_df.sparkSession.createDataFrame(rows, schema=self.schema).createOrReplaceGlobalTempView(self.view)


def view_name(name: str) -> str:
    """A global temporary view of the server, unique to this run of the query."""
    return f"sparkscope_{name}_{uuid.uuid4().hex[:12]}"


def global_view(view: str) -> str:
    return f"global_temp.`{view}`"


def prepare(spark: Any, df: Any, name: str, view: str, retention: Retention, mode: str) -> KeepNewest:
    """Create the (empty) views before the query starts, so reading it never fails, and return the
    foreachBatch function that fills them."""
    from pyspark.sql.types import LongType, StructField, StructType

    from .._pyspark import pickle_by_value

    schema = df.schema
    with_batch = StructType([*schema.fields, StructField(BATCH_COLUMN, LongType(), False)])
    spark.createDataFrame([], with_batch).createOrReplaceGlobalTempView(view)
    columns = ", ".join("`" + field.name.replace("`", "``") + "`" for field in schema.fields)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS SELECT {columns} FROM {global_view(view)}")
    pickle_by_value(__name__)
    return KeepNewest(view, retention.rows, retention.seconds, replace=mode == "complete")


def rows_of(spark: Any, view: str) -> Any:
    """A batch DataFrame over what a bounded query keeps (newest first), without the batch column."""
    return spark.table(global_view(view)).drop(BATCH_COLUMN)


def batch_of(spark: Any, view: str, batch_id: int) -> Any:
    """The rows one batch wrote, if they are still kept."""
    from pyspark.sql.functions import col

    return spark.table(global_view(view)).where(col(BATCH_COLUMN) == batch_id).drop(BATCH_COLUMN)


def drop(spark: Any, view: str) -> None:
    spark.catalog.dropGlobalTempView(view)
