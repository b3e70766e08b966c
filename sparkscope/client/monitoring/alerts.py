"""Alert rules over monitor events. Pure logic: events in, one-line alerts out.

- a query terminated with an exception (with the short error);
- a query falling behind, for several batches in a row: when it reads Kafka, its lag (records between
  where a batch ended and the newest offsets) grows; otherwise, it processes fewer rows per second than
  arrive while its batches keep growing (a backlog builds up), or its sources end each batch short
  of their newest offset (a per-trigger limit cannot keep up). Slower processing alone is not
  enough: with the default trigger Spark measures the input rate over the short gap between
  batches, so processed < input is normal there;
- a batch that took longer than the trigger interval;
- rows dropped by the watermark;
- state that grows without bound: a stateful query with no watermark whose state rows grew in each of
  several batches in a row (a windowed aggregation without withWatermark keeps every window). Said once;
- a batch whose records' end-to-end latency (p99, a Kafka query into sparkscope's sink) is over a limit the user set
  (`latency_over_ms`: none by default, since a micro-batch query's latency is at least its trigger interval).
The slow, dropped and latency alerts repeat at most once a minute per query, so a steady problem does not flood the
screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .monitor import Event
from .progress import Progress, milliseconds

BEHIND_BATCHES = 3
GROWING_BATCHES = 5  # batches in a row whose state grew, in a query without a watermark
REPEAT_AFTER = 60.0
SLOWER = 0.8  # processed below 80% of the input rate


@dataclass(frozen=True)
class Alert:
    query: str | None
    kind: str  # failed | behind | slow | dropped | unbounded | latency | notice
    text: str

    def __str__(self) -> str:
        return f"alert: {self.text}" if self.kind != "notice" else f"note: {self.text}"


@dataclass
class _QueryState:
    behind_streak: int = 0
    last_input_rows: int = 0
    last_behind: int | None = None
    state_rows: int = 0
    growing_streak: int = 0
    unbounded_reported: bool = False
    behind_reported: bool = False
    last_said: dict[str, float] = field(default_factory=dict)


class AlertRules:
    """Feed every monitor event to `feed`; it returns the alerts that event raises."""

    def __init__(self, trigger_seconds: Callable[[str], float | None] = lambda name: None, *,
                 behind_batches: int = BEHIND_BATCHES, repeat_after: float = REPEAT_AFTER,
                 clock: Callable[[], float] = time.time, latency_over_ms: float | None = None):
        self._trigger_seconds = trigger_seconds
        self.latency_over_ms = latency_over_ms  # alert when a batch's p99 latency is over this (None: never)
        self._behind_batches = behind_batches
        self._repeat_after = repeat_after
        self._clock = clock
        self._queries: dict[str, _QueryState] = {}

    def _state(self, name: str) -> _QueryState:
        return self._queries.setdefault(name, _QueryState())

    def _rate_limited(self, name: str, kind: str) -> bool:
        state = self._state(name)
        now = self._clock()
        last = state.last_said.get(kind)
        if last is not None and now - last < self._repeat_after:
            return True
        state.last_said[kind] = now
        return False

    def feed(self, event: Event) -> list[Alert]:
        name = event.name or (event.query_id or "")[:8]
        if event.kind == "notice":
            return [Alert(None, "notice", event.message or "")]
        if event.kind == "terminated" and event.error:
            return [Alert(name, "failed", f"{name} failed: {event.error}")]
        if event.kind == "started":
            self._queries.pop(name, None)
            return []
        if event.kind != "progress" or event.progress is None:
            return []
        return self._progress_alerts(name, event.progress)

    def _unbounded_state(self, name: str, state: _QueryState, p: Progress) -> list[Alert]:
        if not p.state or p.watermark:
            state.growing_streak = 0
            return []
        rows, before = p.state_rows, state.state_rows
        state.state_rows = rows
        state.growing_streak = state.growing_streak + 1 if rows > before else 0
        if state.growing_streak < GROWING_BATCHES or state.unbounded_reported:
            return []
        state.unbounded_reported = True
        return [Alert(name, "unbounded", f"{name} keeps state without bound: {rows:,} state rows, more after each "
                      f"of the last {state.growing_streak} batches, and no watermark to let old keys go. Add "
                      "withWatermark(\"eventTime\", \"10 minutes\") before its aggregation, dropDuplicates or join "
                      "(a window then closes and leaves the state)")]

    def _progress_alerts(self, name: str, p: Progress) -> list[Alert]:
        alerts: list[Alert] = []
        state = self._state(name)
        growing = p.input_rows > state.last_input_rows > 0
        slower = p.processed_rows_per_second < SLOWER * p.input_rows_per_second
        state.last_input_rows = p.input_rows
        lag, last_lag = p.offsets_behind, state.last_behind
        state.last_behind = lag
        if lag is not None:  # Kafka says how far behind it is: behind while that does not shrink
            behind = lag > 0 and (last_lag is None or lag >= last_lag)
        else:
            behind = (slower and growing) or bool(p.lagging_sources)
        if behind:
            state.behind_streak += 1
        else:
            state.behind_streak = 0
            state.behind_reported = False
        if state.behind_streak >= self._behind_batches and not state.behind_reported:
            state.behind_reported = True
            why = (f"{lag:,} records behind the newest Kafka offsets, and not catching up" if lag is not None
                   else f"its sources end batches short of the newest data ({', '.join(p.lagging_sources)})"
                   if p.lagging_sources else f"processing {p.processed_rows_per_second:,.1f} rows/s of "
                   f"{p.input_rows_per_second:,.1f} arriving, batches growing")
            alerts.append(Alert(name, "behind", f"{name} is falling behind: {why} "
                                f"({state.behind_streak} batches in a row)"))
        alerts += self._unbounded_state(name, state, p)
        trigger = self._trigger_seconds(name)
        if (trigger and p.batch_duration_ms is not None and p.batch_duration_ms > trigger * 1000
                and not self._rate_limited(name, "slow")):
            alerts.append(Alert(name, "slow", f"{name}: batch {p.batch_id} took {p.batch_duration_ms / 1000:.1f} s, "
                                f"longer than its {trigger:g} s trigger"))
        limit = self.latency_over_ms
        if (limit is not None and p.latency is not None and p.latency.p99_ms > limit
                and not self._rate_limited(name, "latency")):
            alerts.append(Alert(name, "latency", f"{name}: p99 latency {milliseconds(p.latency.p99_ms)} in batch "
                                f"{p.latency.batch}, over the {milliseconds(limit)} limit set"))
        if p.dropped_by_watermark > 0 and not self._rate_limited(name, "dropped"):
            alerts.append(Alert(name, "dropped", f"{name}: the watermark dropped {p.dropped_by_watermark} late "
                                f"row{'s' if p.dropped_by_watermark != 1 else ''} in batch {p.batch_id}"
                                + (f" (watermark {p.watermark})" if p.watermark else "")))
        return alerts
