"""Assertions over a stream's batches: what its sink holds, what its last batch wrote, its watermark, the rows a batch
dropped as late, what its state holds. A failure is an AssertionError whose text is a table of the expected rows next
to the actual ones, with the batch and the watermark they were read after.

Values compare as a reader writes them: a timestamp as 'YYYY-MM-DD HH:MM:SS' (in the session's time zone) or a
datetime, a struct (a window) as a tuple or a dict of its fields, numbers by value. Order is ignored unless asked.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..client.monitoring.progress import Progress
    from ..client.queries.query import Query
    from ..client.session import Session

Row = tuple[Any, ...]


def canonical(value: Any, zone: _dt.tzinfo | None = None) -> Any:
    """A value as the checks compare it: timestamps as text in the session's time zone, structs as tuples."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None and zone is not None:
            value = value.astimezone(zone).replace(tzinfo=None)
        text = value.isoformat(sep=" ")
        return text[:-7] if text.endswith(".000000") else text
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] in "T ":
        return value.replace("T", " ", 1)
    if isinstance(value, Mapping) or hasattr(value, "asDict"):
        fields = value.asDict() if hasattr(value, "asDict") else value
        return tuple(canonical(item, zone) for item in fields.values())
    if isinstance(value, (list, tuple)):
        return tuple(canonical(item, zone) for item in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _rows(rows: Iterable[Any], zone: _dt.tzinfo | None) -> list[Row]:
    return [canonical(row if isinstance(row, (list, tuple, Mapping)) or hasattr(row, "asDict") else (row,), zone)
            for row in rows]


def _zone(query: Query) -> _dt.tzinfo | None:
    """The session's time zone; None for a query no session owns (its values compare as the server wrote them)."""
    from ..client.rows import session_zone

    return None if query.owner is None else session_zone(query.owner.spark)


def _latest(query: Query) -> Progress | None:
    return query.progress


def _marked(rows: list[Row], others: list[Row], mark: str) -> list[tuple[str, Row]]:
    """Each row with `mark` when `others` lacks it (counting repeats), else a blank."""
    left = Counter(others)
    shown = []
    for row in rows:
        if left[row] > 0:
            left[row] -= 1
            shown.append((" ", row))
        else:
            shown.append((mark, row))
    return shown


def _table(expected: list[Row], actual: list[Row], columns: Sequence[str]) -> str:
    """Expected and actual rows side by side, each marked: '-' missing from actual, '+' not expected."""
    left, right = _marked(expected, actual, "-"), _marked(actual, expected, "+")
    width = max([len(str(row)) for row in expected] + [len(f"expected ({len(expected)} rows)"), 20])
    lines = [f"  columns: {', '.join(columns)}"] if columns else []
    lines.append(f"  {f'expected ({len(expected)} rows)':<{width}}    actual ({len(actual)} rows)")
    blank: tuple[str, Any] = (" ", "")
    for index in range(max(len(left), len(right))):
        mark_e, row_e = left[index] if index < len(left) else blank
        mark_a, row_a = right[index] if index < len(right) else blank
        lines.append(f"{mark_e} {str(row_e):<{width}}  {mark_a} {row_a}")
    return "\n".join(lines)


def _fail(what: str, query: Query, expected: list[Row], actual: list[Row], columns: Sequence[str]) -> AssertionError:
    progress = _latest(query)
    where = (f" after batch {progress.batch_id}, watermark {_watermark(progress, _zone(query)) or 'none'}"
             if progress is not None else " before its first batch")
    return AssertionError(f"{what} of {query.name}{where} differs ('-' expected only, '+' actual only):\n"
                          + _table(expected, actual, columns))


def _same(expected: list[Row], actual: list[Row], ordered: bool) -> bool:
    return expected == actual if ordered else Counter(expected) == Counter(actual)


def check_answer(query: Query, expected: Iterable[Any], *, ordered: bool = False) -> None:
    """What the query's sink holds now is `expected` (rows as tuples, dicts or Rows): every row of the bounded
    sink (the default keeps the newest 10,000) or of the memory sink (a complete-mode result)."""
    zone = _zone(query)
    found = query.rows()
    want, got = _rows(expected, zone), _rows(found.rows, zone)
    if not _same(want, got, ordered):
        raise _fail("The sink", query, want, got, found.columns)


def check_last_batch(query: Query, expected: Iterable[Any], *, ordered: bool = False) -> None:
    """What the query's last batch that read rows wrote is `expected` (a query of the default, bounded sink)."""
    zone = _zone(query)
    batch = last_data_batch(query)
    found = query.batch_rows(batch) if batch is not None else None
    want, got = _rows(expected, zone), _rows(found.rows if found else [], zone)
    if not _same(want, got, ordered):
        raise _fail(f"Batch {batch}'s output" if batch is not None else "The last batch's output", query, want, got,
                    found.columns if found else [])


def last_data_batch(query: Query) -> int | None:
    """The newest batch that read rows (Spark also runs batches without data, to move the watermark on)."""
    with_rows = [p.batch_id for p in query.history if p.input_rows]
    return max(with_rows) if with_rows else None


def check_watermark(query: Query, expected: Any) -> None:
    """The watermark the query's next batch runs with is `expected` (a datetime, or 'YYYY-MM-DD HH:MM:SS' in the
    session's time zone); None: it has none yet."""
    zone = _zone(query)
    progress = _latest(query)
    actual = _watermark(progress, zone) if progress is not None else None
    want = canonical(expected, zone) if expected is not None else None
    if actual != want:
        batch = f"batch {progress.batch_id}" if progress is not None else "no batch yet"
        raise AssertionError(f"The watermark of {query.name} is {actual or 'none'} ({batch}), not {want or 'none'}")


def _watermark(progress: Progress, zone: _dt.tzinfo | None) -> str | None:
    text = progress.watermark
    if not text or text.startswith("1970-01-01"):
        return None
    moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return canonical(moment, zone or _dt.timezone.utc)


def check_dropped(query: Query, expected: int, *, batch: int | None = None) -> None:
    """Batch `batch` (the last that read rows, unless given) dropped `expected` rows as late (Spark's
    numRowsDroppedByWatermark)."""
    batch = last_data_batch(query) if batch is None else batch
    progress = next((p for p in query.history if p.batch_id == batch), None)
    if progress is None and (batch is not None or query.history):
        ran = sorted({p.batch_id for p in query.history})
        raise AssertionError(f"{query.name} ran no batch {batch}: "
                             + (f"its batches are {ran[0]} to {ran[-1]}" if ran else "it ran no batch yet"))
    actual = progress.dropped_by_watermark if progress is not None else 0
    if actual != expected:
        watermark = (_watermark(progress, _zone(query)) if progress is not None else None) or "none"
        raise AssertionError(f"Batch {batch} of {query.name} dropped {actual} late row{'s' if actual != 1 else ''}, "
                             f"not {expected} (the watermark it ran with: {watermark})")


def check_state(session: Session, name: str, expected: Iterable[Any], *, columns: Sequence[str] | None = None,
                ordered: bool = False) -> None:
    """What query `name`'s stateful operator holds (ss.state: one row per key, its key and value columns) is
    `expected`; `columns` picks and orders the columns compared (default: every one but partition_id)."""
    query = session.streams.get(name)
    zone = _zone(query)
    state = session.state(name)
    unknown = [column for column in columns or () if column not in state.columns]
    if unknown:
        raise AssertionError(f"The state of {name} has no column {', '.join(unknown)}: its columns are "
                             f"{', '.join(state.columns)}")
    picked = list(columns) if columns else [c for c in state.columns if c != "partition_id"]
    from ..client._pyspark.arrow import fetch

    found = fetch(state.select(*picked), 100_000)
    want, got = _rows(expected, zone), _rows(found.rows, zone)
    if not _same(want, got, ordered):
        raise _fail("The state", query, want, got, picked)
