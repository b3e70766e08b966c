"""A DataFrame's rows as sparkscope shows them (client/rows.py's Rows), in one round trip: through pyspark's own Arrow
stream (arrow_table), not toArrow(), which asks the server for the schema first."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..rows import Rows, time_zone, zone_of
from . import arrow_table


def fetch(df: Any, n: int | None) -> Rows:
    """`df.limit(n)` collected as Arrow (None: every row): the limit runs on the server, only n rows travel, in one
    round trip (no schema asked first, as toArrow() does). Timestamps are shown in the session's time zone, which the
    server writes into the stream's types."""
    table = arrow_table(df if n is None else df.limit(n))
    zone = next((found for found in map(zone_of, table.schema.types) if found), None)
    return Rows.from_arrow(table, time_zone(zone) if zone else None)


def fetch_at_most(df: Any, limit: int | None) -> Rows:
    """At most `limit` rows of `df` (None: all), with `truncated` set when it had more (one row more travels)."""
    if limit is None:
        return fetch(df, None)
    rows = fetch(df, limit + 1)
    if len(rows) <= limit:
        return rows
    return replace(rows, rows=rows.rows[:limit], truncated=True)
