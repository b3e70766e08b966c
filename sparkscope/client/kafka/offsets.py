"""Planning a Kafka batch: where each partition starts, where a batch ends under a per-trigger limit,
what counts as lost data, and how far a query is behind. Pure logic, offsets as Spark writes them:
{"topic": {"0": 23, "1": 40}}. Runs on the server too (shipped by value with the source)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .options import EARLIEST, LATEST

Offsets = dict[str, dict[str, int]]
TopicPartition = tuple[str, int]
Watermarks = Mapping[TopicPartition, tuple[int, int]]  # (low, high): the first offset kept, the next to be written


def flatten(offsets: Mapping[str, Mapping[str, Any]]) -> dict[TopicPartition, int]:
    return {(topic, int(part)): int(offset) for topic, parts in offsets.items() for part, offset in parts.items()}


def nest(flat: Mapping[TopicPartition, int]) -> Offsets:
    out: Offsets = {}
    for (topic, part), offset in sorted(flat.items()):
        out.setdefault(topic, {})[str(part)] = int(offset)
    return out


def resolve(spec: str | Mapping[str, Mapping[str, int]], watermarks: Watermarks, what: str = "startingOffsets"
            ) -> dict[TopicPartition, int]:
    """earliest / latest / per-partition JSON (-2 earliest, -1 latest), as offsets of `watermarks`' partitions."""
    if spec == "earliest":
        return {tp: low for tp, (low, _) in watermarks.items()}
    if spec == "latest":
        return {tp: high for tp, (_, high) in watermarks.items()}
    given = flatten(spec)  # type: ignore[arg-type]
    out = {}
    for tp, (low, high) in watermarks.items():
        if tp not in given:
            raise ValueError(f"{what} has no offset for partition {tp[0]}-{tp[1]}: give every partition one "
                             f"(-2 for earliest, -1 for latest)")
        offset = given[tp]
        out[tp] = low if offset == EARLIEST else high if offset == LATEST else offset
    return out


@dataclass(frozen=True)
class Loss:
    topic: str
    partition: int
    expected: int  # the offset the query was to read next
    available_from: int | None  # where the partition starts now (None: the partition is gone)

    def __str__(self) -> str:
        where = f"{self.topic}-{self.partition}"
        if self.available_from is None:
            return f"partition {where} is gone (was the topic deleted?); the query was to read it from offset {self.expected}"
        if self.available_from > self.expected:
            return (f"partition {where} now starts at offset {self.available_from}, but the query was to read "
                    f"from offset {self.expected}: records {self.expected}-{self.available_from - 1} were deleted")
        return (f"partition {where} ends at offset {self.available_from}, before the query's next offset "
                f"{self.expected}: the topic was recreated or its offsets reset")


def begin(start: Mapping[TopicPartition, int], watermarks: Watermarks) -> tuple[dict[TopicPartition, int], list[Loss]]:
    """Where each current partition is read from after `start`, and what was lost on the way. A partition new
    since `start` is read from its earliest offset (as Spark does); one whose records before the start were
    deleted, from its earliest; one whose offsets went back (recreated), from its earliest too."""
    out, losses = {}, []
    for tp, (low, high) in watermarks.items():
        offset = start.get(tp)
        if offset is None:
            out[tp] = low
        elif offset < low:
            losses.append(Loss(tp[0], tp[1], offset, low))
            out[tp] = low
        elif offset > high:
            losses.append(Loss(tp[0], tp[1], offset, high))
            out[tp] = low
        else:
            out[tp] = offset
    losses += [Loss(tp[0], tp[1], offset, None) for tp, offset in start.items() if tp not in watermarks]
    return out, losses


def limit(begin_at: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int | None
          ) -> dict[TopicPartition, int]:
    """Where a batch ends: the latest offsets, or, over `max_rows`, a share of it per partition in proportion
    to its backlog (Spark's maxOffsetsPerTrigger rule: a share under one record rounds up, others down)."""
    sizes = {tp: max(0, latest[tp] - begin_at.get(tp, latest[tp])) for tp in latest}
    total = sum(sizes.values())
    if max_rows is None or total <= max_rows:
        return dict(latest)
    out = {}
    for tp, size in sizes.items():
        share = max_rows * (size / total)
        taken = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(latest[tp], begin_at.get(tp, latest[tp]) + taken)
    return out


@dataclass(frozen=True)
class Range:
    topic: str
    partition: int
    start: int
    end: int  # exclusive

    @property
    def size(self) -> int:
        return self.end - self.start


def ranges(begin_at: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
           min_partitions: int | None = None) -> list[Range]:
    """The offset ranges a batch reads, one per partition with new records; with minPartitions, the
    largest are split until there are that many (as Spark does)."""
    out = [Range(tp[0], tp[1], begin_at[tp], end[tp]) for tp in sorted(end) if end[tp] > begin_at.get(tp, end[tp])]
    if not min_partitions:
        return out
    while len(out) < min_partitions:
        largest = max(out, key=lambda r: r.size, default=None)
        if largest is None or largest.size < 2:
            break
        middle = largest.start + largest.size // 2
        at = out.index(largest)
        out[at:at + 1] = [Range(largest.topic, largest.partition, largest.start, middle),
                          Range(largest.topic, largest.partition, middle, largest.end)]
    return out


@dataclass(frozen=True)
class Lag:
    """How far a source's batch ended behind the newest offsets: records in all, and in its worst partition."""

    total: int
    worst: int
    partitions: int

    @property
    def average(self) -> float:
        return self.total / self.partitions if self.partitions else 0.0


def lag(end_offset: Any, latest_offset: Any) -> Lag | None:
    """From a progress' endOffset and latestOffset (both {"topic": {"0": n}}); None for other sources."""
    try:
        end, latest = flatten(end_offset), flatten(latest_offset)
    except (AttributeError, TypeError, ValueError):
        return None
    if not latest:
        return None
    behind = [max(0, latest[tp] - end.get(tp, latest[tp])) for tp in latest]
    return Lag(total=sum(behind), worst=max(behind), partitions=len(behind))
