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
import decimal as _decimal
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._pyspark import plan_fields
from ..errors import ConfigError
from ..error_reading import translated
from .planning import parse_grace
from .server_jar import PACKAGE, ServerJar

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField, StructType

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
        self._dropped = False

    def __repr__(self) -> str:
        return f"<sparkscope memory source {self.name}: {self.batches} batches added ({self.schema.simpleString()})>"

    def add(self, rows: Iterable[Any]) -> int:
        """Add one batch: tuples (in the schema's order), dicts (by column name) or Rows. A string given for a
        timestamp or date column is read as ISO 8601 ('2018-03-02 10:00:00'), a timestamp's in the session's time
        zone, as Spark reads TIMESTAMP '2018-03-02 10:00:00'. Returns the batch's number (0 first); each added batch
        is one micro-batch of a query that reads `df`."""
        if self._dropped:
            raise ConfigError(f"This memory source ({self.name}) was dropped: its batches are gone from the server",
                              "Make a new one with ss.source.memory(schema)", code="feed_forgotten")
        if isinstance(rows, (str, bytes, Mapping)) or (isinstance(rows, tuple) and not _holds_rows(rows)):
            raise ConfigError(f"add takes a list of rows, and {rows!r} is one row or one value",
                              f"Put the rows in a list: add([{rows!r}])", code="feed_rows")
        zone = self._zone() if any(f.dataType.typeName() == "timestamp" for f in self.schema.fields) else None
        given = [self._row(row, zone) for row in rows]
        with translated():
            self._spark.createDataFrame(given, self.schema).write.format(WRITER).option("feed", self.name) \
                .mode("append").save()
        self.batches += 1
        return self.batches - 1

    def drop(self) -> None:
        """Drop what the feed keeps on the server (a query still reading it fails)."""
        self._jar.drop(self.name)
        self._dropped = True

    def forget(self) -> None:
        """drop(), by its name before 0.3 (with a DeprecationWarning): `forget` meant three things."""
        from ..deprecation import deprecated

        deprecated("MemorySource.forget() is deprecated: use drop()")
        self.drop()

    def _zone(self) -> _dt.tzinfo | None:
        from ..rows import session_zone

        with translated():
            return session_zone(self._spark)

    def _row(self, row: Any, zone: _dt.tzinfo | None) -> tuple[Any, ...]:
        fields = self.schema.fields
        if isinstance(row, Mapping) or getattr(row, "__fields__", None):  # a Row of named fields, or a dict
            values = dict(row.asDict() if hasattr(row, "asDict") else row)
            unknown = set(values) - {f.name for f in fields}
            if unknown:
                raise ConfigError(f"{', '.join(sorted(unknown))} {'is not a column' if len(unknown) == 1 else 'are not columns'}"
                                  f" of this source ({self.schema.simpleString()})", "Name its columns, or give tuples")
            row = tuple(values.get(f.name) for f in fields)
        row = tuple(row) if isinstance(row, (list, tuple)) else (row,)  # a Row(2, 'b') of no names is a tuple
        if len(row) != len(fields):
            raise ConfigError(f"{row!r} has {len(row)} values; this source has {len(fields)} columns "
                              f"({self.schema.simpleString()})", "Give one value per column, in their order")
        return tuple(_value(value, field, zone) for value, field in zip(row, fields, strict=True))


def _holds_rows(rows: tuple[Any, ...]) -> bool:
    """A tuple given to add() is a batch when its items are rows (tuples, lists, dicts, Rows), not values."""
    return all(isinstance(row, (tuple, list, Mapping)) for row in rows)


# What a value of each Spark type may be given as (a string is read for timestamps and dates)
_ACCEPTS: dict[str, tuple[type, ...]] = {
    "string": (str,), "boolean": (bool,), "byte": (int,), "short": (int,), "integer": (int,), "long": (int,),
    "float": (int, float), "double": (int, float), "decimal": (int, float, _decimal.Decimal),
    "timestamp": (_dt.datetime, str), "timestamp_ntz": (_dt.datetime, str), "date": (_dt.date, str),
    "binary": (bytes, bytearray),
}


def _value(value: Any, field: StructField, zone: _dt.tzinfo | None) -> Any:
    """A value as createDataFrame takes it, or one line naming the column, the value and what it takes. An ISO
    8601 string for a timestamp or date column is made a datetime; a timestamp's in the session's time zone."""
    type_name = field.dataType.typeName()
    accepted = _ACCEPTS.get(type_name)
    if value is None or accepted is None:
        return value
    numeric_bool = isinstance(value, bool) and type_name not in ("boolean",)
    if not isinstance(value, accepted) or numeric_bool:
        shown = {"timestamp": "a datetime or an ISO 8601 string ('2018-03-02 10:00:00')",
                 "timestamp_ntz": "a datetime or an ISO 8601 string ('2018-03-02 10:00:00')",
                 "date": "a date or an ISO 8601 string ('2018-03-02')"}.get(
                     type_name, f"{'an' if type_name[0] in 'aeiou' else 'a'} {type_name}")
        raise ConfigError(f"{value!r} is not {shown}, for column {field.name} ({field.dataType.simpleString()})",
                          f"Give column {field.name} {shown}", code="feed_value", data={"column": field.name})
    if isinstance(value, str) and type_name in ("timestamp", "timestamp_ntz", "date"):
        try:
            parsed = (_dt.date.fromisoformat(value) if type_name == "date" else _dt.datetime.fromisoformat(value))
        except ValueError:
            raise ConfigError(f"{value!r} is not an ISO 8601 {'date' if type_name == 'date' else 'time'}, for "
                              f"column {field.name} ({field.dataType.simpleString()})",
                              "Write it like '2018-03-02 10:00:00' (or '2018-03-02' for a date)",
                              code="feed_value", data={"column": field.name}) from None
        if type_name == "timestamp" and isinstance(parsed, _dt.datetime) and parsed.tzinfo is None and zone:
            parsed = parsed.replace(tzinfo=zone)  # as Spark reads TIMESTAMP '…': a wall-clock time of the session
        return parsed
    return value
