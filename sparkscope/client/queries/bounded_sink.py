"""sparkscope's default sink for append and update streams: the newest rows only, newest first.

Spark's memory sink keeps every row a query ever wrote in the driver's heap, so reading it slows by the minute
and, on a long run, the server runs out of memory. The bounded sink keeps a ring of the newest rows instead, at
most `Retention.rows` of them and, if asked, only those of the last `Retention.seconds`. It is a DataSource V2
table of the server's JVM (`sparkscope/jars/src/sparkscope/v2/sink/`, in the jar beside it). The bound holds in
every batch: each writer task keeps only its partition's newest rows, no more than the ring keeps, and hands the
driver only those; the driver's commit puts them in front of the ring and drops what falls off its end. So one
batch costs the driver at most the partitions times the ring's rows, however large it is. No Python runs on the
server for it, so it runs on a server without pandas or pyarrow.

A ring has an owner and an end (server_jar.py): only its user's sessions read or drop it, and it ends, with no
client, a grace period after its query ended (or, before its query ran a batch, after its session ended).

The embedded server has the jar on its class path (server/command.py); any other server gets it from the client,
as a session artifact, the first time a session starts a bounded query (server_jar.py).

A ring is named after one run of one query (view_name); a temporary view named after the query, in the session
that started it, selects the query's own columns from it, so `spark.table(name)` and SQL read it as they would a
memory sink's table. Each row also carries the batch that wrote it (BATCH_COLUMN), so a tail reads exactly one
batch. The rows live in the server's driver only: after a restart the query goes on from its checkpoint, and what
it keeps starts again from its next batch.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..error_reading import translated
from ..monitoring.progress import Latency
from .event_time import EVENT_COLUMN
from .planning import Retention
from .server_jar import PACKAGE, ServerJar

BATCH_COLUMN = "__sparkscope_batch"
SINK_CLASS = f"{PACKAGE}.sink.KeepNewest"


def ring_of(description: str) -> str | None:
    """The ring a query writes to, from its sink's description in its progress ('sparkscope-keep-newest[RING]')."""
    match = re.fullmatch(r"sparkscope-keep-newest\[(.+)\]", description.strip())
    return match.group(1) if match else None


def view_name(name: str) -> str:
    """The ring of one run of a query: unique to that run, on the server."""
    return f"sparkscope_{name}_{uuid.uuid4().hex[:12]}"


def ring_options(view: str, retention: Retention, mode: str) -> dict[str, Any]:
    """What make_ring is told of a ring (Control.java)."""
    return {"name": view, "rows": retention.rows, "seconds": retention.seconds, "replace": mode == "complete",
            "grace_ms": -1 if retention.grace is None else int(retention.grace * 1000)}


READING_WITHIN = 60.0  # seconds a real-time start waits for its writers to run


@dataclass(frozen=True)
class Prepared:
    """A ring made for a query: the options its writer gives the sink, and the checkpoint folder the ring made
    on the server for it (None unless asked)."""

    sink_options: dict[str, str]
    scratch_checkpoint: str | None
    writer_packet: bytes | None = None  # a real-time query's: the JVM writer that puts each row into the ring


class BoundedSink:
    """The bounded sink as one session uses it: its rings made, read and dropped. Every call that reads a ring makes
    sure the jar's classes load first: a session that did not start the query (a second REPL's :peek) reads it too."""

    def __init__(self, spark: Any, jar: ServerJar) -> None:
        self._spark = spark
        self._jar = jar

    def load(self) -> str:
        """Where the sink's class loads from on the server (server_jar.py)."""
        return self._jar.load()

    def prepare(self, df: Any, name: str, view: str, retention: Retention, mode: str, *,
                scratch_checkpoint: bool = False, realtime: bool = False) -> Prepared:
        """What the query's writer gives the sink so that its start makes the ring (empty, so reading it never
        fails) and the temporary view named after the query: no call of its own. `scratch_checkpoint`: the ring
        also makes its query a checkpoint folder in the server's temporary folder (Spark gives a memory sink one,
        never a sink of a class of its own), gone with the ring: that folder must be known before the start, so
        the ring is made first, in a call of its own."""
        with translated():
            schema = df.schema.json()
        made = {**ring_options(view, retention, mode), "query": name, "schema": schema, "view": name}
        if realtime:  # Spark refuses a sink class of sparkscope's in real time: a foreach writer of the jar's fills the
            # ring row by row (sink/RingRows.java), made on the server for the ring made first
            answer = self._jar.call("make_ring", **made, scratch_checkpoint=scratch_checkpoint)[0]
            packet = self._jar.call("ring_writer", name=view)[0]["packet"]
            return Prepared({}, answer.get("scratch"), base64.b64decode(packet))
        if not scratch_checkpoint:
            self.load()  # the sink's class loads from the server's class path, or this session's artifact
            options = {key: str(value).lower() if isinstance(value, bool) else str(value)
                       for key, value in made.items() if value is not None}
            return Prepared({**options, "ring": view}, None)
        answer = self._jar.call("make_ring", **made, scratch_checkpoint=True)[0]
        return Prepared({"ring": view}, answer.get("scratch"))

    def wait_reading(self, view: str, running: Callable[[], bool], timeout: float = READING_WITHIN) -> bool:
        """Wait until a real-time query's writers run (its ring says so), as long as the query `running` and at most
        `timeout` seconds: then its batch reads from offsets fixed already, so a record produced from now on
        reaches its rows (a Kafka read from the latest offsets skips what came before they were fixed). Whether
        they run."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(kept.name == view and kept.reading for kept in self._jar.listing()[0]) or not running():
                return running()
            time.sleep(0.2)  # polling the ring's state, with a deadline
        return False

    def latency(self, view: str, batch: int | None = None) -> Latency | None:
        """The end-to-end latency the ring measured of batch `batch` (the newest measured if None): a real-time
        query's, whose progress cannot carry it (its sink is a foreach writer); None when it measured none."""
        return Latency.from_metrics(self._jar.call("latency", name=view, batch=batch)[0])

    def total_latency(self, view: str, *, reset: bool = False) -> Latency | None:
        """The latency of every record the ring measured since its query started, or since the last `reset` (which
        starts the count anew): a run's figures, where each progress says one batch's."""
        return Latency.from_metrics(self._jar.call("latency", name=view, total=True, reset=reset or None)[0])

    def _read(self, view: str) -> Any:
        self.load()
        return self._spark.read.format(SINK_CLASS).option("ring", view).load()

    def rows(self, view: str) -> Any:
        """A batch DataFrame over what a bounded query keeps (newest batch first), without the batch column."""
        return self._read(view).drop(BATCH_COLUMN, EVENT_COLUMN)

    def batch(self, view: str, batch_id: int) -> Any:
        """The rows one batch wrote, if they are still kept."""
        from pyspark.sql.functions import col

        return self._read(view).where(col(BATCH_COLUMN) == batch_id).drop(BATCH_COLUMN, EVENT_COLUMN)

    def drop(self, view: str) -> None:
        """Free what the ring of one run keeps (its query, if it still runs, keeps nothing more)."""
        self._jar.drop(view)

    def discard(self, name: str, view: str) -> None:
        """A ring made for a query that did not start: the ring (and the checkpoint it made) and the view named
        after the query, gone."""
        self.drop(view)
        with translated():
            self._spark.catalog.dropTempView(name)
