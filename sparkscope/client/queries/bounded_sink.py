"""sparkscope's default sink for append and update streams: the newest rows only, newest first.

Spark's memory sink keeps every row a query ever wrote in the driver's heap, so reading it slows by the minute
and, on a long run, the server runs out of memory. The bounded sink keeps a ring of the newest rows instead, at
most `Retention.rows` of them and, if asked, only those of the last `Retention.seconds`. It is a DataSource V2
table of the server's JVM (`sparkscope/jars/src/sparkscope/sink/KeepNewest.java`, in the jar beside it): each
writer task keeps its partition's newest rows and hands them to the driver in its commit, as Spark's memory sink
does, and the driver drops what falls off the ring's end. No Python runs on the server for it, so it costs the
server what the memory sink costs, and it runs on a server without pandas or pyarrow.

The embedded server has the jar on its class path (server/command.py); any other server gets it from the client,
as a session artifact, the first time a session starts a bounded query (server_classes.py).

A ring is named after one run of one query (view_name); a temporary view named after the query, in the session
that started it, selects the query's own columns from it, so `spark.table(name)` and SQL read it as they would a
memory sink's table. Each row also carries the batch that wrote it (BATCH_COLUMN), so a tail reads exactly one
batch. The rows live in the server's driver only: after a restart the query goes on from its checkpoint, and what
it keeps starts again from its next batch.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import translated
from .planning import Retention
from .server_classes import ServerClasses

BATCH_COLUMN = "__sparkscope_batch"
SINK_CLASS = "sparkscope.sink.KeepNewest"
CHECKPOINT_KEY = "sparkscope.checkpoint"  # the batch column's metadata naming a ring's scratch checkpoint
RING_GONE = "SPARKSCOPE_RING_GONE"  # the sink's error when it keeps no rows of that name (KeepNewest.java)


def ring_of(description: str) -> str | None:
    """The ring a query writes to, from its sink's description in its progress ('sparkscope-keep-newest[RING]')."""
    match = re.fullmatch(r"sparkscope-keep-newest\[(.+)\]", description.strip())
    return match.group(1) if match else None


def view_name(name: str) -> str:
    """The ring of one run of a query: unique to that run, on the server."""
    return f"sparkscope_{name}_{uuid.uuid4().hex[:12]}"


def ring_options(view: str, retention: Retention, mode: str) -> dict[str, str]:
    options = {"ring": view, "rows": str(retention.rows), "replace": str(mode == "complete").lower()}
    if retention.seconds is not None:
        options["seconds"] = str(retention.seconds)
    return options


@dataclass(frozen=True)
class Prepared:
    """A ring made for a query: the options its writer gives the sink, and the checkpoint folder the ring made
    on the server for it (None unless asked)."""

    sink_options: dict[str, str]
    scratch_checkpoint: str | None


class BoundedSink:
    """The bounded sink as one session uses it: its rings made, read and dropped. Every call that reads a ring makes
    sure the jar's classes load first: a session that did not start the query (a second REPL's :peek) reads it too."""

    def __init__(self, spark: Any, classes: ServerClasses) -> None:
        self._spark = spark
        self._classes = classes

    def load(self) -> str:
        """Where the sink's class loads from on the server (server_classes.py)."""
        return self._classes.load()

    def prepare(self, df: Any, name: str, view: str, retention: Retention, mode: str, *,
                scratch_checkpoint: bool = False) -> Prepared:
        """Make the (empty) ring before the query starts, so reading it never fails, and the temporary view named
        after the query. `scratch_checkpoint`: the ring also makes its query a checkpoint folder in the server's
        temporary folder (Spark gives a memory sink one, never a sink of a class of its own), gone with the ring."""
        self.load()
        options = ring_options(view, retention, mode)
        if scratch_checkpoint:
            options["scratch_checkpoint"] = "true"
        with translated():
            made = self._spark.read.format(SINK_CLASS).options(**options, schema=df.schema.json()).load()
            batch = made.schema[BATCH_COLUMN]  # analysing the read makes the ring (one RPC)
            columns = [f"`{field.name.replace('`', '``')}`" for field in df.schema.fields]
            self._read(view).select(*columns).createOrReplaceTempView(name)
        return Prepared({"ring": view}, (batch.metadata or {}).get(CHECKPOINT_KEY))

    def _read(self, view: str) -> Any:
        self.load()
        return self._spark.read.format(SINK_CLASS).option("ring", view).load()

    def rows(self, view: str) -> Any:
        """A batch DataFrame over what a bounded query keeps (newest batch first), without the batch column."""
        return self._read(view).drop(BATCH_COLUMN)

    def batch(self, view: str, batch_id: int) -> Any:
        """The rows one batch wrote, if they are still kept."""
        from pyspark.sql.functions import col

        return self._read(view).where(col(BATCH_COLUMN) == batch_id).drop(BATCH_COLUMN)

    def drop(self, view: str) -> None:
        """Free what the ring of one run keeps (its query, if it still runs, keeps nothing more)."""
        self.load()
        with translated():
            self._spark.read.format(SINK_CLASS).option("ring", view).option("forget", "true").load().collect()

    def discard(self, name: str, view: str) -> None:
        """A ring made for a query that did not start: the ring (and the checkpoint it made) and the view named
        after the query, gone."""
        self.drop(view)
        with translated():
            self._spark.catalog.dropTempView(name)
