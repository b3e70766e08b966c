"""Why a row was dropped: a query's watermark (its event-time column and delay), the watermark after each
batch and the late rows each dropped, and whether a row of a given event time would be dropped. Pure logic
over the plan's text and the progress history."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from ..errors import ConfigError
from .progress import Progress

_WATERMARK = re.compile(r"EventTimeWatermark\s+(?:[0-9a-f-]{36},\s*)?([^#\s,]+)#\d+:\s*[\w<>:, ]+?,\s*([^\n]+)$")


@dataclass(frozen=True)
class WatermarkSpec:
    column: str
    delay: str


def watermark_specs(plan: str) -> list[WatermarkSpec]:
    """The event-time column and delay of each withWatermark of the plan (a stream-stream join has one per side),
    as Spark prints them, once each."""
    found: list[WatermarkSpec] = []
    for line in plan.splitlines():
        match = _WATERMARK.search(line.strip())
        if match:
            spec = WatermarkSpec(match.group(1).strip("`"), match.group(2).strip())
            if spec not in found:
                found.append(spec)
    return found


def watermark_spec(plan: str) -> WatermarkSpec | None:
    """The event-time column and delay of the plan's first withWatermark."""
    specs = watermark_specs(plan)
    return specs[0] if specs else None


def parse_time(text: str) -> datetime:
    """'2023-08-01 10:03:00', '2023-08-01T10:03:00Z' or with an offset: a point in time (UTC when none)."""
    cleaned = text.strip().replace("Z", "+00:00")
    try:
        value = datetime.fromisoformat(cleaned)
    except ValueError:
        raise ConfigError(f"'{text}' is not an event time", "Write it as 2023-08-01 10:03:00 (UTC) or with an "
                          "offset, 2023-08-01T10:03:00+02:00", code="bad_time") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _watermark_time(text: str | None) -> datetime | None:
    if not text or text.startswith("1970-01-01T00:00:00"):
        return None  # Spark's "no watermark yet"
    return parse_time(text)


@dataclass(frozen=True)
class Verdict:
    """What would happen to a row of event time `at`."""

    at: datetime
    dropped_now: bool
    watermark: datetime | None
    first_dropping_batch: int | None  # the first batch whose watermark is at or past `at`
    last_keeping_batch: int | None


def late_marks(history: list[Progress]) -> list[tuple[int, datetime | None]]:
    """(batch, the watermark its rows were judged by) for each batch of `history` (batches that ran, in order).
    Spark judges a batch's rows late by the watermark of the batch before it (its eviction watermark is the
    batch's own, which the next batch judges by): the first batch judges none late."""
    judged: list[tuple[int, datetime | None]] = []
    before: datetime | None = None
    for progress in history:
        judged.append((progress.batch_id, before))
        before = _watermark_time(progress.watermark) or before
    return judged


def verdict(history: list[Progress], at: datetime, current: datetime | None = None) -> Verdict:
    """Spark drops a row from a stateful operator once its event time (for a window: its end) is at or before
    the watermark its batch is judged by: the watermark of the batch before it. A row that comes now is judged
    by the newest watermark (`current`, when the history holds none: its checkpoint's)."""
    marks = late_marks(history)
    newest = next((mark for mark in (_watermark_time(p.watermark) for p in reversed(history)) if mark), current)
    dropping = next((batch for batch, mark in marks if mark is not None and at <= mark), None)
    keeping = [batch for batch, mark in marks if mark is None or at > mark]
    return Verdict(at, newest is not None and at <= newest, newest, dropping, keeping[-1] if keeping else None)


def late_rows(history: list[Progress]) -> list[tuple[int, int]]:
    """(batch, rows dropped) for every batch that dropped late rows."""
    return [(p.batch_id, p.dropped_by_watermark) for p in history if p.dropped_by_watermark]


@dataclass(frozen=True)
class JudgedBatch:
    """One batch of a query with a watermark, as Spark judged its rows."""

    batch_id: int
    timestamp: str  # when it ran (its progress's timestamp)
    late_at_or_before: datetime | None  # the watermark it judged by: a row at or before it was late (None: none was)
    watermark: str | None  # the watermark after it, as Spark reports it
    input_rows: int
    dropped: int  # the late rows it dropped


@dataclass(frozen=True)
class Lateness:
    """A query's watermark and its late rows (`ss.late(name)`): the event-time column and delay of each
    withWatermark, each batch's judgement, and `verdict(at)` for a row of a given event time."""

    name: str
    watermarks: list[WatermarkSpec]
    batches: list[JudgedBatch]
    checkpoint_watermark: datetime | None  # the watermark its checkpoint holds, when no batch ran since it started
    history: list[Progress]

    @property
    def dropped(self) -> dict[int, int]:
        """{batch: late rows dropped} for every batch that dropped some."""
        return dict(late_rows(self.history))

    def verdict(self, at: datetime | str) -> Verdict:
        """What happens to a row of event time `at` (a datetime, or '2023-08-01 10:03:00' in UTC)."""
        return verdict(self.history, parse_time(at) if isinstance(at, str) else at, self.checkpoint_watermark)


def judged(name: str, watermarks: list[WatermarkSpec], history: list[Progress],
           checkpoint_watermark: datetime | None = None) -> Lateness:
    """The Lateness of `name` from its plan's watermarks and the progress of the batches it ran (oldest first)."""
    marks = dict(late_marks(history))
    batches = [JudgedBatch(p.batch_id, p.timestamp, marks.get(p.batch_id), p.watermark, p.input_rows,
                           p.dropped_by_watermark) for p in history]
    return Lateness(name, watermarks, batches, checkpoint_watermark, history)
