"""A DataFrame's rows as sparkscope shows them (client/rows.py's Rows), in one round trip: through pyspark's own Arrow
stream (arrow_table), not toArrow(), which asks the server for the schema first."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..rows import ZONE_COLUMN, Rows, holds, is_zoned_time, time_zone
from . import arrow_table


def fetch(df: Any, n: int | None) -> Rows:
    """`df.limit(n)` collected as Arrow (None: every row): the limit runs on the server, only n rows travel.
    Timestamps are shown in the session's time zone, which comes with the rows (one more column,
    current_timezone()): one round trip (no schema asked first, as toArrow() does)."""
    from pyspark.sql import functions

    table = arrow_table((df if n is None else df.limit(n)).select("*", functions.current_timezone().alias(ZONE_COLUMN)))
    zones = table.column(table.num_columns - 1)
    table = table.remove_column(table.num_columns - 1)
    zoned = len(zones) and any(holds(column_type, is_zoned_time) for column_type in table.schema.types)
    return Rows.from_arrow(table, time_zone(str(zones[0])) if zoned else None)


def fetch_at_most(df: Any, limit: int | None) -> Rows:
    """At most `limit` rows of `df` (None: all), with `truncated` set when it had more (one row more travels)."""
    if limit is None:
        return fetch(df, None)
    rows = fetch(df, limit + 1)
    if len(rows) <= limit:
        return rows
    return replace(rows, rows=rows.rows[:limit], truncated=True)
