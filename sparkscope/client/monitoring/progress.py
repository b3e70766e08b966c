"""A typed view of Spark's StreamingQueryProgress JSON. Pure logic, no pyspark import."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..kafka.offsets import Lag, lag

OPERATION_KEYS = ("addBatch", "getBatch", "latestOffset", "queryPlanning", "walCommit", "commitOffsets")


@dataclass(frozen=True)
class SourceProgress:
    description: str
    start_offset: Any
    end_offset: Any
    latest_offset: Any
    input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float

    @property
    def lag(self) -> Lag | None:
        """How many records a Kafka source's batch ended behind the newest (None for other sources): from
        its endOffset and latestOffset, which Spark's connector and sparkscope's own source both report."""
        return lag(self.end_offset, self.latest_offset)


@dataclass(frozen=True)
class Latency:
    """The end-to-end latency of one batch's records (a Kafka query into sparkscope's sink): from each record's
    timestamp in Kafka to the moment the sink had it, in milliseconds, to within 4% (sink/Latency.java). Spark's
    progress reports no latency: sparkscope's sink puts these in its sink's metrics, and in real time, where that
    sink is a foreach writer, the ring says them (Monitor's `measure`)."""

    batch: int  # -1: the figures of several batches
    records: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any] | None) -> Latency | None:
        """From the sink's metrics (strings, as Spark keeps them); None when they hold no latency."""
        if not isinstance(metrics, Mapping):
            return None
        try:
            return cls(batch=int(metrics.get("latencyBatch", -1)), records=int(metrics["latencyRecords"]),
                       p50_ms=float(metrics["latencyP50Ms"]), p90_ms=float(metrics["latencyP90Ms"]),
                       p99_ms=float(metrics["latencyP99Ms"]), max_ms=float(metrics["latencyMaxMs"]))
        except (KeyError, TypeError, ValueError):
            return None

    def __str__(self) -> str:
        return f"p50 {milliseconds(self.p50_ms)}, p90 {milliseconds(self.p90_ms)}, p99 {milliseconds(self.p99_ms)}"


def milliseconds(ms: float) -> str:
    """A latency as people read it: 4.2 ms, 85 ms, 1.3 s, 2.0 min."""
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.1f} min"


@dataclass(frozen=True)
class StateProgress:
    operator: str
    rows_total: int
    rows_updated: int
    memory_bytes: int
    dropped_by_watermark: int


@dataclass(frozen=True)
class Progress:
    query_id: str
    run_id: str
    name: str | None
    timestamp: str
    batch_id: int
    input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float
    batch_duration_ms: int | None
    durations_ms: dict[str, int]
    watermark: str | None
    state: list[StateProgress]
    sources: list[SourceProgress]
    sink: str
    sink_rows: int | None = None  # rows the batch wrote to its sink (None: the sink does not say)
    latency: Latency | None = None  # its records' end-to-end latency (a Kafka query into sparkscope's sink)
    # Spark's JSON as compact text: a monitor keeps 600 of these per query, and a record holding the
    # parsed dicts took 8.5 KB instead of 3.5 KB
    raw_json: str = field(repr=False, compare=False, default="{}")

    @property
    def raw(self) -> Mapping[str, Any]:
        """Spark's progress JSON, as a dict."""
        return json.loads(self.raw_json)

    @property
    def state_rows(self) -> int:
        return sum(s.rows_total for s in self.state)

    @property
    def state_memory_bytes(self) -> int:
        return sum(s.memory_bytes for s in self.state)

    @property
    def offsets_behind(self) -> int | None:
        """Records the query's Kafka sources are behind the newest offsets, in all (None: no Kafka source)."""
        lags = [s.lag for s in self.sources]
        known = [found.total for found in lags if found is not None]
        return sum(known) if known else None

    @property
    def lagging_sources(self) -> list[str]:
        """Sources whose batch stopped short of the newest data (a per-trigger limit left a backlog)."""
        return [s.description for s in self.sources
                if s.latest_offset is not None and s.end_offset is not None and s.latest_offset != s.end_offset]

    @property
    def dropped_by_watermark(self) -> int:
        return sum(s.dropped_by_watermark for s in self.state)

    @property
    def ran(self) -> bool:
        """A batch ran (wrote to its sink). Spark also reports, while no data comes, the next batch's id as a progress
        of no batch (no addBatch): an idle report, not a batch."""
        return "addBatch" in self.durations_ms

    @property
    def json(self) -> str:
        return json.dumps(self.raw, indent=2, sort_keys=False)

    @classmethod
    def from_json(cls, data: Any) -> Progress:
        if isinstance(data, (str, bytes)):
            data = json.loads(data)
        durations = {k: int(v) for k, v in (data.get("durationMs") or {}).items()}
        state = [
            StateProgress(
                operator=str(op.get("operatorName", "")),
                rows_total=int(op.get("numRowsTotal", 0) or 0),
                rows_updated=int(op.get("numRowsUpdated", 0) or 0),
                memory_bytes=int(op.get("memoryUsedBytes", 0) or 0),
                dropped_by_watermark=int(op.get("numRowsDroppedByWatermark", 0) or 0),
            )
            for op in data.get("stateOperators") or []
        ]
        sources = [
            SourceProgress(
                description=str(src.get("description", "")),
                start_offset=_offset(src.get("startOffset")),
                end_offset=_offset(src.get("endOffset")),
                latest_offset=_offset(src.get("latestOffset")),
                input_rows=int(src.get("numInputRows", 0) or 0),
                input_rows_per_second=_rate(src.get("inputRowsPerSecond")),
                processed_rows_per_second=_rate(src.get("processedRowsPerSecond")),
            )
            for src in data.get("sources") or []
        ]
        return cls(
            query_id=str(data.get("id", "")),
            run_id=str(data.get("runId", "")),
            name=data.get("name"),
            timestamp=str(data.get("timestamp", "")),
            batch_id=int(data.get("batchId", -1)),
            # lastProgress leaves the totals out (Scala derives them from the sources); events carry them.
            input_rows=int(data.get("numInputRows", sum(src.input_rows for src in sources)) or 0),
            input_rows_per_second=_rate(data.get("inputRowsPerSecond",
                                                 sum(src.input_rows_per_second for src in sources))),
            processed_rows_per_second=_rate(data.get("processedRowsPerSecond",
                                                     sum(src.processed_rows_per_second for src in sources))),
            batch_duration_ms=durations.get("triggerExecution"),
            durations_ms=durations,
            watermark=(data.get("eventTime") or {}).get("watermark"),
            state=state,
            sources=sources,
            sink=str((data.get("sink") or {}).get("description", "")),
            sink_rows=_count((data.get("sink") or {}).get("numOutputRows")),
            latency=Latency.from_metrics((data.get("sink") or {}).get("metrics")),
            raw_json=json.dumps(data, separators=(",", ":")),
        )


def _count(value: Any) -> int | None:
    """A row count of Spark's JSON; None for its -1 (not measured) or none at all."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def _rate(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    if number != number:  # NaN
        return 0.0
    return round(number, 1)  # events round to one decimal, lastProgress does not: keep them comparable


def _offset(value: Any) -> Any:
    """Offsets are JSON; pyspark hands them over either parsed or still as JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


CSV_COLUMNS = ("name", "batch_id", "timestamp", "input_rows", "input_rows_per_second", "processed_rows_per_second",
               "batch_duration_ms") + tuple(f"{key}_ms" for key in OPERATION_KEYS) + (
               "watermark", "state_rows", "state_memory_bytes", "dropped_by_watermark", "offsets_behind",
               "latency_p50_ms", "latency_p90_ms", "latency_p99_ms")


def batches_run(history: list[Progress]) -> list[Progress]:
    """The progress of each batch that ran, once (a batch run again: its last report), in batch order; no idle
    report of a batch that did not run."""
    by_batch = {progress.batch_id: progress for progress in history if progress.ran}
    return [by_batch[batch] for batch in sorted(by_batch)]


def write_history(history: list[Progress], path: str | Path, *, replace: bool = False) -> int:
    """Write progress history as JSON lines (.jsonl/.ndjson/.json) or CSV (.csv); returns the row count. A file
    already there is written over only with `replace`."""
    from ..rows import open_export

    with open_export(path, replace=replace) as out:
        suffix = Path(out.name).suffix.lower()
        if suffix == ".csv":
            writer = csv.writer(out)
            writer.writerow(CSV_COLUMNS)
            for p in history:
                writer.writerow([p.name or "", p.batch_id, p.timestamp, p.input_rows, p.input_rows_per_second,
                                 p.processed_rows_per_second, "" if p.batch_duration_ms is None else p.batch_duration_ms]
                                + [p.durations_ms.get(key, "") for key in OPERATION_KEYS]
                                + [p.watermark or "", p.state_rows, p.state_memory_bytes, p.dropped_by_watermark,
                                   "" if p.offsets_behind is None else p.offsets_behind]
                                + (["", "", ""] if p.latency is None else
                                   [p.latency.p50_ms, p.latency.p90_ms, p.latency.p99_ms]))
        else:
            for p in history:
                out.write(json.dumps(dict(p.raw), separators=(",", ":")) + "\n")
    return len(history)
