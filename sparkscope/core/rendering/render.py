"""All of sparkscope's output formatting: tables, vertical records, JSON, messages, errors."""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import re
import shutil
import textwrap
import threading
from collections.abc import Sequence
from typing import Any

from ...client.error_reading import translate
from ..hints import repl_text
from ...client.rows import MapValue
from .results import Block, Message, Result, Table

FORMATS = ("table", "json", "vertical")
MARKER = "…"
WHOLE_WIDTH = 100_000  # a table drawn with every value whole (as to a pipe)
_LOCK = threading.Lock()  # tabulate's padding is a module global: one table at a time sets it


def narrowed(table: Table, width: int) -> Table:
    """Leave out droppable columns, least useful first, until the table's natural width fits."""
    dropped: set[str] = set()
    for name in table.droppable:
        if natural_width(table.without(dropped)) <= width:
            break
        dropped.add(name)
    return table.without(dropped) if dropped else table


def natural_width(table: Table) -> int:
    texts = [table.columns] + [[cell(v) for v in row] for row in table.rows]
    widths = [max(len(str(r[i])) for r in texts) for i in range(len(table.columns))]
    return sum(widths) + 3 * len(widths) + 1


# Control characters a value may carry (from a topic, a file, a user's table): C0 but newline (shown as \n where a
# value is cut to a column), DEL and C1. Printed raw, ESC and BEL drive the terminal (set its title, colour the
# screen), and a tab breaks a table's borders. Format characters too (zero-width space and joiners, bidi marks,
# the byte-order mark): a terminal draws them in no width, or one, and a table's borders no longer line up; shown
# as escapes they line up, and a hidden character in the data is seen.
_CONTROL = ("[\x00-\x09\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
            "\u2066-\u206f\ufeff]")  # compiled on first use (re caches it)
_NAMED = {"\t": "\\t", "\r": "\\r"}


def visible(text: str) -> str:
    """`text` with every control character but newline shown as an escape: \t, \r, \x1b, \x07, \x9b."""
    if not re.search(_CONTROL, text):
        return text
    return re.sub(_CONTROL, lambda m: _NAMED.get(m.group(), _escape(m.group())), text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def cell(value: Any) -> str:
    """Spark-style text for one value: NULL, {struct, fields}, [arrays], ISO-ish timestamps; control characters
    shown as escapes (visible)."""
    if value is None:
        return "NULL"
    if isinstance(value, _dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S") + (f".{value.microsecond // 1000:03d}" if value.microsecond else "")
        return text + (f" {value.tzname()}" if value.tzinfo is not None else "")  # a zone Python did not know
    if isinstance(value, MapValue):  # Spark prints a map's entries as key -> value
        return "{" + ", ".join(f"{cell(k)} -> {cell(v)}" for k, v in value.items()) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(cell(v) for v in value.values()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell(v) for v in value) + "]"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return _NOT_FINITE[str(value)]
        return f"{value:.6g}" if abs(value) < 1e15 else repr(value)
    if isinstance(value, bytes):
        return value.hex()
    return visible(str(value))


def truncate(text: str, width: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: max(1, width - 1)] + MARKER


def terminal_width() -> int:
    """The terminal's width; output to a pipe or file is never truncated."""
    import sys

    if not sys.stdout.isatty():
        return WHOLE_WIDTH
    return shutil.get_terminal_size((120, 40)).columns


def render_table(table: Table, width: int | None = None) -> str:
    width = width or terminal_width()
    texts = [[cell(v).replace("\n", "\\n") for v in row] for row in table.rows]
    limits = fit_widths([table.columns] + texts, width - 3 * len(table.columns) - 1)  # psql: 3 per column
    rows = [[truncate(t, limit) for t, limit in zip(row, limits, strict=False)] for row in texts]
    headers = [truncate(c, limit) for c, limit in zip(table.columns, limits, strict=False)]
    import tabulate as _tabulate  # imported on first use: it is not needed to draw the first prompt

    body = ""
    if headers:  # psql-tight columns (no blanks after short values under long headers): tabulate's own setting,
        with _LOCK:  # a module global, set only for this call and given back
            padding, _tabulate.MIN_PADDING = _tabulate.MIN_PADDING, 0
            try:
                body = _tabulate.tabulate(rows, headers=headers, tablefmt="psql", disable_numparse=True)
            finally:
                _tabulate.MIN_PADDING = padding
    parts = [table.title] if table.title else []
    parts.append(body)
    parts.extend(textwrap.fill(line, width) if len(line) > width else line
                 for line in table_footer(table).splitlines())
    return "\n".join(p for p in parts if p)


def table_footer(table: Table) -> str:
    """The line under a table: its own, or the count of its rows."""
    if table.footer is not None:
        return table.footer
    count = len(table.rows)
    return f"({count} row{'s' if count != 1 else ''}" + (", 0 columns)" if not table.columns else ")")


def fit_widths(rows: Sequence[Sequence[str]], budget: int, floor: int = 6) -> list[int]:
    """Column widths that fit `budget` characters: the widest columns give way first.

    Water-filling: the largest cap C (at least `floor`) with sum(min(width, C)) within budget, found by
    bisection, then the spare characters go to the cut columns, left to right. Linear in the cells
    (the old one-character-at-a-time loop took 12 s on one row of 200 cells of 10,000 characters)."""
    if not rows or not rows[0]:
        return []
    widths = [max(len(str(r[i])) for r in rows if i < len(r)) for i in range(len(rows[0]))]
    if sum(widths) <= budget or max(widths) <= floor:
        return widths
    low, high = floor, max(widths)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(min(w, middle) for w in widths) <= budget:
            low = middle
        else:
            high = middle - 1
    fitted = [min(w, low) for w in widths]
    spare = budget - sum(fitted)
    for index, wide in enumerate(widths):
        if spare <= 0:
            break
        if wide > low:
            fitted[index] += 1
            spare -= 1
    return fitted


def fits(table: Table, width: int, floor: int = 6) -> bool:
    """Whether a table can be drawn within `width` with every column at least `floor` wide."""
    return len(table.columns) * (floor + 3) + 1 <= width


def render_vertical(table: Table, width: int | None = None) -> str:
    width = width or terminal_width()
    label = max((len(c) for c in table.columns), default=0)
    out = []
    for index, row in enumerate(table.rows, 1):
        out.append(f"-[ RECORD {index} ]" + "-" * max(0, min(width, 40) - 14 - len(str(index))))
        for column, value in zip(table.columns, row, strict=False):
            name = truncate(column, max(4, width // 3)).ljust(min(label, max(4, width // 3)))
            out.append(truncate(f"{name} | {truncate(cell(value), max(10, width - len(name) - 3))}", width))
    if not table.rows:
        out.append("(0 rows)")
    return "\n".join(out)


_NOT_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # as Spark prints them; JSON has none


def jsonable(value: Any) -> Any:
    if isinstance(value, float) and str(value) in _NOT_FINITE:
        return _NOT_FINITE[str(value)]
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dict):  # a struct's fields, or a map's entries: a JSON object either way
        return {cell(k) if isinstance(value, MapValue) else str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def to_json(command: str, result: Result, ok: bool = True) -> str:
    """One JSON object per command; `ok` is what its exit code says."""
    payload: dict = {"command": command, "ok": ok}
    items = result if isinstance(result, list) else [result]
    tables = [item for item in items if isinstance(item, Table)]
    for item in items:
        if isinstance(item, Table) and len(tables) > 1:  # each table an object of its own: its title, its rows
            payload.setdefault("tables", []).append({**({"title": item.title} if item.title else {}),
                                                     "rows": _json_rows(item)})
        elif isinstance(item, Table):
            if item.title:
                payload["title"] = item.title
            payload.setdefault("rows", []).extend(_json_rows(item))
        elif isinstance(item, Message):
            payload["message"] = item.text
            payload.update(jsonable(item.data))
        elif isinstance(item, Block):
            payload["text"] = item.text if item.data is None else None
            if item.data is not None:
                payload["data"] = jsonable(item.data)
                payload.pop("text")
    return json.dumps(payload, default=str, allow_nan=False)


def _json_rows(table: Table) -> list[dict]:
    return [{c: jsonable(v) for c, v in zip(table.columns, row, strict=False)} for row in table.rows]


def show(command: str, result: Result, fmt: str = "table", ok: bool = True) -> str:
    """A command's result as it is printed: one JSON object with --format json, else rendered."""
    return to_json(command, result, ok) if fmt == "json" else render(result, fmt)


def render(result: Result, fmt: str = "table", width: int | None = None) -> str:
    if result is None:
        return ""
    if isinstance(result, list):
        return "\n".join(filter(None, (render(r, fmt, width) for r in result)))
    if isinstance(result, Table):
        width = width or terminal_width()
        if fmt == "vertical" or result.layout == "vertical":
            return render_vertical(result, width)
        if result.layout == "whole":  # every value whole: the terminal wraps the lines (Spark's truncate=false)
            return render_table(result, WHOLE_WIDTH)
        result = narrowed(result, width)
        # like pgcli's auto_expand: a table that cannot fit the terminal is shown one record at a time
        return render_table(result, width) if fits(result, width) else render_vertical(result, width)
    if isinstance(result, (Message, Block)):
        return result.text
    return str(result)


def progress_charts(name: str, history: list, width: int | None = None) -> str:
    """`:progress NAME --chart`: the dashboard's charts, printed once."""
    from .charts import progress_chart_lines

    width = min(width or terminal_width(), 120)
    span = f"batches {history[0].batch_id}–{history[-1].batch_id}" if history else "no batches yet"
    return "\n".join([f"{name}: {span}", *progress_chart_lines(history, width - 1)])


WATCH_COLUMNS = ["query", "state", "batch", "input/s", "proc/s", "duration", "watermark", "state rows", "dropped"]
WATCH_TRENDS = ["input/s trend", "proc/s trend", "duration trend"]


def watch_cells(track: Any, kafka: bool, trend: int, latency: bool = False) -> list[str]:
    """One query's row of :watch (WATCH_COLUMNS, behind when a query reads Kafka, p99 latency when one measures
    it, then WATCH_TRENDS `trend` wide): its newest batch, and its rates and durations over the batches the monitor
    keeps."""
    from .charts import sparkline

    p = track.latest
    history = list(track.history)
    inputs = [h.input_rows_per_second for h in history]
    processed = [h.processed_rows_per_second for h in history]
    top = max(inputs + processed, default=0.0)
    cells = [track.name, track.state, str(p.batch_id) if p else "-", rate(p.input_rows_per_second) if p else "-",
             rate(p.processed_rows_per_second) if p else "-", duration_ms(p.batch_duration_ms) if p else "-",
             watermark(p.watermark if p else None), str(p.state_rows) if p else "-",
             str(p.dropped_by_watermark) if p else "-"]
    if kafka:
        cells.append(behind(p.offsets_behind if p else None))
    if latency:
        cells.append(latency_ms(p.latency.p99_ms if p and p.latency else None))
    return cells + [sparkline(inputs, trend, top), sparkline(processed, trend, top),
                    sparkline([h.batch_duration_ms or 0 for h in history], trend)]


def watermark(value: str | None) -> str:
    """An event-time watermark as `2016-07-26 02:00:00` (UTC, to the second), or '-' before there is one."""
    return (value or "-").replace("T", " ").replace(".000Z", "").replace("Z", "")[:19]


def error_line(error: BaseException) -> str:
    """One line for any failure: pyspark's and gRPC's are translated first."""
    return f"error: {visible(repl_text(translate(error)))}"


def error_json(message: str, hint: str = "") -> str:
    """An error for scripts (--format json): one object on stderr that they can parse."""
    return json.dumps({"error": message, "hint": hint})


def value_json(value: Any, text: str) -> str:
    """A Python expression's value for --format json: the value itself when JSON can hold it."""
    plain = jsonable(value)
    try:
        return json.dumps({"value": plain}, allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps({"value": text})


def rate(value: float) -> str:
    return f"{value:,.1f}"


def cores(count: float) -> str:
    return f"{count:.1f} core{'' if round(count, 1) == 1.0 else 's'}"


def busy_tasks(busy: list[float] | None) -> str | None:
    """The server's computing tasks, for :session and server status (None: a server this machine cannot see)."""
    if busy is None:
        return None
    if not busy:
        return "none computing"
    return f"{len(busy)} computing, {cores(sum(busy))} busy (a cancelled command's tasks show here until they end)"


def behind(records: int | None) -> str:
    """How far a query's Kafka sources are behind the newest offsets ("-": it reads no Kafka)."""
    return "-" if records is None else f"{records:,}"


LATENCY_LEGEND = ("latency: from each record's timestamp in Kafka to the moment sparkscope's sink had it, over the "
                  "batch's records (p50: half of them took less, p99: all but 1%)")


def latency_ms(value: float | None) -> str:
    """An end-to-end latency ("-": none measured)."""
    from ...client.monitoring.progress import milliseconds

    return "-" if value is None else milliseconds(value)


def duration_ms(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value} ms" if value < 10_000 else f"{value / 1000:.1f} s"


def size(count: int) -> str:
    """Bytes as people read them: 812 B, 4.2 KiB, 31.0 MiB, 1.2 GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def uptime(seconds: float) -> str:
    """A running time to the second: 4m 05s, 2h 03m 09s."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def age(seconds: float) -> str:
    """A duration as its largest unit: 45s, 12m, 5h, 3d."""
    for unit, scale in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= scale:
            return f"{int(seconds // scale)}{unit}"
    return f"{int(seconds)}s"


def sink_text(sink: str, keep: object) -> str:
    """'bounded sink (last 10,000 rows)', 'memory sink'."""
    return f"{sink} sink ({keep})" if keep else f"{sink} sink"


def short_id(query_id: str) -> str:
    return query_id[:8]
