"""A streaming source a test feeds, batch by batch, over Spark Connect: `ss.source.memory("user STRING, ts TIMESTAMP")`.

Spark's own MemoryStream needs a classic JVM session; over Spark Connect a test had only a rate source and sleep.
Here each `add(rows)` sends the rows to the server as any createDataFrame does (no filesystem shared with it) and
they become one batch of the feed, kept in the server driver's memory (sparkscope/jars: v2/feed/); a query reading
`src.df` takes exactly one added batch per micro-batch, so a test knows which rows each batch saw, and
`query.process_all_available()` returns once every added batch was processed. A batch is let go of once every query
that reads it has processed it. The feed is its user's (another user's session cannot feed or read it), and it
goes when its session closes (Session.close drops it at once; a session that is never closed ends on the server,
and the feed a grace period after) or with the server. It needs no Python on the server, so it works on any Spark
4.x server.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._pyspark import plan_fields
from ..errors import ConfigError, translated
from .planning import parse_grace
from .server_jar import PACKAGE, ServerJar

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

READER = f"{PACKAGE}.feed.FeedSource"
WRITER = f"{PACKAGE}.feed.FeedWriter"


def feed_of(description: str) -> str | None:
    """The feed a query reads, from its source's description in its progress ('sparkscope-feed[NAME]')."""
    text = description.strip()
    if text.startswith("sparkscope-feed[") and text.endswith("]"):
        return text[len("sparkscope-feed["):-1]
    return None


def reads_feed(plan: bytes, feed: str) -> bool:
    """A recorded plan (the catalog's) reads the feed `feed`: the option that names it is in the plan. A query that
    has not run a batch yet has no sources in its progress, and Spark explains no plan for it."""
    return ("key", "feed") in (fields := plan_fields(plan)) and ("value", feed) in fields


class MemorySource:
    """One feed: `df` is its streaming DataFrame, `add(rows)` adds one batch, `batches` counts what was added."""

    def __init__(self, spark: Any, jar: ServerJar, schema: str | StructType, name: str | None = None, *,
                 grace: str | float | None = None):
        self._spark = spark
        self._jar = jar
        self.name = name or f"sparkscope_feed_{uuid.uuid4().hex[:12]}"
        with translated():
            self.schema: StructType = (spark.createDataFrame([], schema).schema if isinstance(schema, str)
                                       else schema)
        seconds = parse_grace(grace)
        jar.call("make_feed", name=self.name, schema=self.schema.json(),
                 grace_ms=-1 if seconds is None else int(seconds * 1000))
        with translated():
            self.df: DataFrame = spark.readStream.format(READER).option("feed", self.name).load()
        self.batches = 0

    def __repr__(self) -> str:
        return f"<sparkscope memory source {self.name}: {self.batches} batches added ({self.schema.simpleString()})>"

    def add(self, rows: Iterable[Any]) -> int:
        """Add one batch: tuples (in the schema's order), dicts (by column name) or Rows. A string given for a
        timestamp or date column is read as ISO 8601 ('2018-03-02 10:00:00'). Returns the batch's number (0 first);
        each added batch is one micro-batch of a query that reads `df`."""
        given = [self._row(row) for row in rows]
        with translated():
            self._spark.createDataFrame(given, self.schema).write.format(WRITER).option("feed", self.name) \
                .mode("append").save()
        self.batches += 1
        return self.batches - 1

    def forget(self) -> None:
        """Drop what the feed keeps on the server (a query still reading it fails)."""
        self._jar.forget(self.name)

    def _row(self, row: Any) -> tuple[Any, ...]:
        fields = self.schema.fields
        if isinstance(row, Mapping) or hasattr(row, "asDict"):
            values = dict(row.asDict() if hasattr(row, "asDict") else row)
            unknown = set(values) - {f.name for f in fields}
            if unknown:
                raise ConfigError(f"{', '.join(sorted(unknown))} {'is not a column' if len(unknown) == 1 else 'are not columns'}"
                                  f" of this source ({self.schema.simpleString()})", "Name its columns, or give tuples")
            row = tuple(values.get(f.name) for f in fields)
        row = tuple(row) if isinstance(row, (list, tuple)) else (row,)
        if len(row) != len(fields):
            raise ConfigError(f"{row!r} has {len(row)} values; this source has {len(fields)} columns "
                              f"({self.schema.simpleString()})", "Give one value per column, in their order")
        return tuple(_value(value, field.dataType.typeName()) for value, field in zip(row, fields, strict=True))


def _value(value: Any, type_name: str) -> Any:
    """A value as createDataFrame takes it: an ISO 8601 string for a timestamp or date column made a datetime."""
    if isinstance(value, str) and type_name in ("timestamp", "timestamp_ntz"):
        return _dt.datetime.fromisoformat(value)
    if isinstance(value, str) and type_name == "date":
        return _dt.date.fromisoformat(value)
    return value
