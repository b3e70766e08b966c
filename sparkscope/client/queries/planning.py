"""Pure decisions made before a query starts: triggers, output modes, names. No pyspark import."""

from __future__ import annotations

import re
from typing import Any
from dataclasses import dataclass

from ..errors import ConfigError, UnsupportedOperation

FILE_SINKS = ("parquet", "json", "csv", "orc", "text")
BOUNDED = "bounded"  # sparkscope's default sink: the newest rows only (client/queries/bounded_sink.py)
SINKS = (BOUNDED, "memory", "console", "table", "foreach_batch", "kafka") + FILE_SINKS
MODES = ("append", "update", "complete")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNITS = {
    "ms": "milliseconds", "msec": "milliseconds", "millisecond": "milliseconds", "milliseconds": "milliseconds",
    "s": "seconds", "sec": "seconds", "secs": "seconds", "second": "seconds", "seconds": "seconds",
    "m": "minutes", "min": "minutes", "mins": "minutes", "minute": "minutes", "minutes": "minutes",
    "h": "hours", "hour": "hours", "hours": "hours",
    "d": "days", "day": "days", "days": "days",
}
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$")


@dataclass(frozen=True)
class Trigger:
    """kind: default | processing | once | available-now | continuous | realtime; interval like '5 seconds' (for
    realtime, how long each of its long-running batches lasts: a checkpoint interval, not a latency)."""

    kind: str = "default"
    interval: str | None = None

    def __str__(self) -> str:
        if self.kind in ("continuous", "realtime"):
            return f"{self.kind}:{self.interval}"
        return str(self.interval) if self.kind == "processing" else self.kind

    def writer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for DataStreamWriter.trigger()."""
        kwargs: dict[str, dict[str, Any]] = {
            "default": {},
            "processing": {"processingTime": self.interval},
            "once": {"once": True},
            "available-now": {"availableNow": True},
            "continuous": {"continuous": self.interval},
            "realtime": {"realTime": self.interval},
        }
        return kwargs[self.kind]

    @property
    def seconds(self) -> float | None:
        if not self.interval:
            return None
        return _seconds_of(self.interval)


_UNIT_SECONDS = {"milliseconds": 0.001, "seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}


def _seconds_of(normalised: str) -> float:
    number, unit = normalised.split()
    return float(number) * _UNIT_SECONDS[unit]


def interval_seconds(text: str) -> float:
    """'500ms', '2s', '1 minute' as seconds (a ConfigError for anything else)."""
    return _seconds_of(interval(text))


def interval(text: str) -> str:
    match = _INTERVAL.match(text)
    if not match or match.group(2).lower() not in _UNITS:
        raise ConfigError(f"'{text}' is not a time interval", "Write it like 5s, 500ms, 1 minute")
    number = match.group(1)
    if float(number) <= 0:
        raise ConfigError(f"'{text}' is not a positive interval", "Write it like 5s, 500ms, 1 minute")
    return f"{number} {_UNITS[match.group(2).lower()]}"


REALTIME_BATCH = "5 seconds"  # Spark's shortest real-time batch (spark.sql.streaming.realTimeMode.minBatchDuration)


def parse_trigger(text: str | None) -> Trigger:
    """'5 seconds' / '5s' / 'once' / 'available-now' / 'continuous:1s' / 'realtime' / 'realtime:10s' / None."""
    if text is None or str(text).strip() in ("", "default"):
        return Trigger()
    value = str(text).strip()
    lowered = value.lower()
    if lowered == "once":
        return Trigger("once")
    if lowered in ("available-now", "availablenow", "available_now"):
        return Trigger("available-now")
    if lowered.startswith("continuous"):
        _, _, rest = value.partition(":")
        return Trigger("continuous", interval(rest or "1 second"))
    if lowered.startswith(("realtime", "real-time", "real_time")):
        _, _, rest = value.partition(":")
        return Trigger("realtime", interval(rest or REALTIME_BATCH))
    try:
        return Trigger("processing", interval(value))
    except ConfigError:
        raise ConfigError(
            f"'{value}' is not a trigger",
            "Use an interval (5s, 1 minute), once, available-now, continuous:1s or realtime (realtime:10s)",
        ) from None


DEFAULT_KEEP_ROWS = 10_000  # 20 rows to :peek and thousands to filter, a few MB of the server's heap
MAX_KEEP_ROWS = 1_000_000  # each batch costs the driver up to its partitions times this: more belongs in a file sink
TIME_KEEP_ROWS = 100_000  # a keep in seconds alone keeps at most this many rows: a fast stream's 10 minutes is millions
_COUNT = re.compile(r"^(\d+)\s*(k|K|M)?\s*(rows?)?$")  # M is a million; 10m is ten minutes


@dataclass(frozen=True)
class Retention:
    """What the bounded sink keeps: at most `rows` rows, and (when `seconds` is set) only those that came
    in the last `seconds`. Newest first. `grace`: seconds the rows outlive their query (None: the server's own
    spark.sparkscope.grace, 15 minutes by default), so that a stopped query can still be peeked at."""

    rows: int = DEFAULT_KEEP_ROWS
    seconds: float | None = None
    grace: float | None = None

    def __str__(self) -> str:
        parts = [] if self.seconds is None else [f"{_short_duration(self.seconds)}"]
        parts.append(f"{self.rows:,} rows")
        return "last " + ", at most ".join(parts)

    def spec(self) -> str:
        """The text parse_keep reads back (kept in the catalog)."""
        parts = [str(self.rows)] if self.seconds is None else [f"{_number(self.seconds)}s", str(self.rows)]
        if self.grace is not None:
            parts.append(f"grace={_number(self.grace)}s")
        return ",".join(parts)


def _number(value: float) -> str:
    """A number as interval() reads it back: no exponent."""
    return str(int(value)) if value == int(value) else f"{value:f}".rstrip("0")


def _short_duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and (seconds % size == 0 or size == 86400):
            count = seconds / size
            return f"{count:.0f} {unit}" if count == int(count) else f"{count:.1f} {unit}"
    return f"{seconds:g} s"


MAX_GRACE = 7 * 86400  # seconds: the server's own limit by default (spark.sparkscope.limit.grace, Limits.java)


def parse_grace(text: str | int | float | None) -> float | None:
    """'5m', '30s', '2d', '0' (freed as soon as its query ends): how long a bounded query's rows outlive it, at most
    MAX_GRACE (a server may allow less: it says so)."""
    if text is None or str(text).strip() == "":
        return None
    if str(text).strip() in ("0", "0s"):
        return 0.0
    try:
        seconds = Trigger("processing", interval(str(text))).seconds or 0.0
    except ConfigError:
        raise ConfigError(f"'{text}' is not a grace period", "Write it like 30s, 15m, 2h or 2d (at most 7 days), or 0 "
                          "to free the rows as soon as the query ends") from None
    if seconds > MAX_GRACE:
        raise ConfigError(f"A grace period of {_short_duration(seconds)} is longer than the longest, 7 days",
                          "Keep what must outlive its query longer in a file sink (--sink parquet)", code="grace_too_long")
    return seconds


def parse_keep(text: str | int | None, grace: str | int | float | None = None) -> Retention:
    """'10000', '50k', '10m' (minutes), '1h', '10m,50000': what the bounded sink keeps; `grace` as parse_grace
    reads it. The catalog's spec may carry the grace too ('10000,grace=300s')."""
    seconds_grace = parse_grace(grace)
    if text is None or str(text).strip() == "":
        return Retention(grace=seconds_grace)
    hint = "Write a row count (10000, 50k) or a time (10m, 1h), or both: 10m,50000"
    rows: int | None = None
    seconds: float | None = None
    for part in str(text).split(","):
        part = part.strip()
        if part.startswith("grace="):
            seconds_grace = parse_grace(part.removeprefix("grace="))
            continue
        count = _COUNT.match(part)
        if count:
            number = int(count.group(1)) * {None: 1, "k": 1000, "K": 1000, "M": 1_000_000}[count.group(2)]
            if rows is not None or number <= 0:
                raise ConfigError(f"'{text}' is not what to keep", hint)
            rows = number
            continue
        try:
            number_unit = interval(part)
        except ConfigError:
            raise ConfigError(f"'{text}' is not what to keep", hint) from None
        if seconds is not None:
            raise ConfigError(f"'{text}' is not what to keep", hint)
        seconds = Trigger("processing", number_unit).seconds
    if rows is not None and rows > MAX_KEEP_ROWS:
        raise ConfigError(f"Keeping {rows:,} rows is more than the bounded sink holds ({MAX_KEEP_ROWS:,})",
                          "Write that many rows to a file sink, or to Spark's memory sink")
    if seconds is not None:
        return Retention(rows or TIME_KEEP_ROWS, seconds, seconds_grace)
    return Retention(rows or DEFAULT_KEEP_ROWS, grace=seconds_grace)


def default_sink(mode: str, trigger: Trigger) -> str:
    """The sink a query gets when none is asked for: complete mode replaces its result every batch, so
    Spark's memory sink holds one result (bounded by the keys); append and update keep adding rows, so
    they go to the bounded sink, unless continuous processing (which has no foreachBatch) rules it out."""
    return "memory" if mode == "complete" or trigger.kind == "continuous" else BOUNDED


def memory_sink_warning(sink: str, mode: str, trigger: Trigger) -> str | None:
    if sink != "memory" or mode == "complete":
        return None
    grows = (f"Spark's memory sink keeps every row of this {mode}-mode stream in the server's memory: reading "
             "it slows as it grows, and the server can run out of memory")
    if trigger.kind == "continuous":
        return f"{grows} (continuous processing cannot use the bounded sink; stop it when you have seen enough)"
    return f"{grows} (the default sink keeps the newest {DEFAULT_KEEP_ROWS:,} rows)"


def sort_order(spec: str) -> list[tuple[str, bool]]:
    """`--order "a, b desc"` as (column, descending) pairs: SQL's own way to say the direction, which
    pyspark's orderBy("b desc") would take for a column named `b desc`."""
    keys = []
    for item in spec.split(","):
        words = item.split()
        if not words:
            continue
        descending = words[-1].lower() == "desc"
        if words[-1].lower() in ("asc", "desc"):
            words = words[:-1]
        if len(words) != 1:
            raise ConfigError(f"Cannot sort by '{item.strip()}'",
                              "Name columns, each optionally followed by asc or desc: --order \"value desc, name\"")
        keys.append((words[0].strip("`"), descending))
    return keys


MAX_NAME = 200  # a name becomes a checkpoint folder (<name>-<8 hex>): a file name has at most 255 bytes


def check_name(name: str) -> str:
    if isinstance(name, str) and len(name) > MAX_NAME:
        raise ConfigError(f"A query name of {len(name):,} characters is too long",
                          f"Use at most {MAX_NAME} characters (it names the query's table and checkpoint folder)")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"'{name}' is not a valid query name",
            "Use letters, digits and underscores, starting with a letter (it becomes a table name)",
        )
    return name


def check_sink(sink: str) -> str:
    if sink not in SINKS:
        raise ConfigError(f"'{sink}' is not a sink", "Use one of: " + ", ".join(SINKS))
    return sink


@dataclass(frozen=True)
class PlanShape:
    """What the analyzed plan of a streaming DataFrame contains, as far as output modes care."""

    aggregation: bool = False
    watermark_before_aggregation: bool = False
    watermark_after_aggregation: bool = False
    stream_stream_join: bool = False
    stateful_function: bool = False  # applyInPandasWithState / transformWithState
    declared_mode: str | None = None  # the output mode such a function declares; the query must run in it
    deduplication: bool = False  # dropDuplicates (and its within-watermark form)
    session_window: bool = False


_NODE = re.compile(r"^[\s:|+-]*~?(\w+)")


def _analyzed_section(explain: str) -> str:
    """The analyzed logical plan of an extended explain (all of it, if there are no sections)."""
    if "== Analyzed Logical Plan ==" not in explain:
        return explain
    section = explain.split("== Analyzed Logical Plan ==", 1)[1].split("\n== ", 1)[0]
    return "\n".join(section.strip("\n").splitlines()[1:])  # first line is the output schema


def plan_shape(analyzed_plan: str) -> PlanShape:
    """Read an analyzed logical plan (explain text) top-down: a node printed above is an ancestor."""
    lines = [line for line in _analyzed_section(analyzed_plan).splitlines() if line.strip()]
    nodes = [match.group(1) if match else None for match in map(_NODE.search, lines)]
    agg_at = [i for i, node in enumerate(nodes) if node == "Aggregate"]
    wm_at = [i for i, line in enumerate(lines) if "EventTimeWatermark" in line]
    joins = nodes.count("Join")
    relations = sum(1 for line in lines if "StreamingRelation" in line or "StreamingDataSourceV2" in line)
    stateful = [line for line in lines if "FlatMapGroupsInPandasWithState" in line or "TransformWithState" in line]
    deduplication = any(node in ("Deduplicate", "DeduplicateWithinWatermark") for node in nodes)
    session_window = any("session_window" in line for line in lines)
    # its node prints the declared mode after the output attributes: "…, [k#1L, n#2L], Append, NoTimeout"
    declared = re.search(r"\], (Append|Update|Complete), ", stateful[0]) if stateful else None
    declared_mode = declared.group(1).lower() if declared else None
    if not agg_at:
        return PlanShape(stream_stream_join=joins > 0 and relations > 1, stateful_function=bool(stateful),
                         declared_mode=declared_mode, deduplication=deduplication, session_window=session_window)
    first_agg = agg_at[0]
    return PlanShape(
        aggregation=True,
        watermark_before_aggregation=any(i > first_agg for i in wm_at),
        watermark_after_aggregation=any(i < first_agg for i in wm_at),
        stream_stream_join=joins > 0 and relations > 1,
        stateful_function=bool(stateful),
        declared_mode=declared_mode,
        deduplication=deduplication,
        session_window=session_window,
    )


def choose_mode(shape: PlanShape, sink: str, mode: str | None) -> str:
    """Infer the output mode, or reject a combination Spark would reject, naming the valid ones."""
    file_like = sink in FILE_SINKS or sink == "table"
    if mode is not None:
        mode = mode.lower()
        if mode not in MODES:
            raise ConfigError(f"'{mode}' is not an output mode", "Use append, update or complete")
    if shape.stateful_function:  # Spark refuses a query mode other than the one the function declares
        return mode or shape.declared_mode or "update"
    if not shape.aggregation:
        if mode == "complete":
            raise UnsupportedOperation(
                "Complete mode needs a streaming aggregation, and this query has none",
                "Use append (the default here) or update",
            )
        return mode or "append"
    bounded = shape.watermark_before_aggregation
    if file_like:
        what = f"A {sink} sink" if sink != "table" else "A table sink"
        if mode in ("complete", "update"):
            raise UnsupportedOperation(
                f"{what} only takes append mode, not {mode}",
                "Add withWatermark before the aggregation and use append, or write to a memory sink in complete mode"
                if not bounded else "Use append mode (rows appear once their window closes)",
            )
        if not bounded:
            raise UnsupportedOperation(
                f"{what} needs append mode, and an aggregation without a watermark cannot be appended",
                "Call withWatermark on the event-time column before the groupBy, or use a memory sink",
            )
        return "append"
    if mode == "append" and not bounded:
        raise UnsupportedOperation(
            "Append mode on an aggregation needs a watermark set before the aggregation",
            "Use complete or update, or call withWatermark before the groupBy",
        )
    return mode or "complete"


def watermark_warning(shape: PlanShape) -> str | None:
    if shape.aggregation and shape.watermark_after_aggregation and not shape.watermark_before_aggregation:
        return ("withWatermark is applied after the aggregation, so it cannot bound the aggregation's state "
                "(late rows are never dropped and state grows forever); call it before groupBy")
    return None
