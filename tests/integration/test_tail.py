"""A console sink's batches as the client prints them (queries/tail.py), against a real memory sink."""

from __future__ import annotations

from sparkscope.client.queries.tail import Tail
from tests.helpers import wait_for


def test_a_batch_read_after_later_ones_were_written_prints_its_own_rows_only(ss):
    query = ss.start(ss.source.rate(rows_per_second=20).select("value"), "late_reads", sink="memory",
                     trigger="0.5 seconds")
    printed = []

    def on_batch(batch):
        printed.append(batch)
        if batch.batch_id == 1:  # a busy client: batch 2 is read when the table holds batches 2 to 4
            wait_for(lambda: query.progress is not None and query.progress.batch_id >= 4, 60,
                     what="three more batches")

    tail = Tail(ss, query, on_batch, limit=1_000, empty=True).start(from_start=True)
    try:
        wait_for(lambda: len(printed) >= 5, 60, what="five batches printed")
        wrote = {p.batch_id: p.sink_rows for p in query.history}
    finally:
        tail.stop()
        query.stop()
    assert [batch.batch_id for batch in printed[:5]] == [0, 1, 2, 3, 4]
    assert [(batch.total, len(batch.rows.rows)) for batch in printed[:5]] == [
        (wrote[n], wrote[n]) for n in range(5)]
    values = sorted(row[0] for batch in printed[:5] for row in batch.rows.rows)
    assert values == list(range(len(values)))  # every row once, under the batch that wrote it


class _NoEvents:
    """A monitor whose events never come (a listener's lag, or a poll not due yet, made endless)."""

    def subscribe(self, callback):
        return lambda: None


class _SessionWithoutEvents:
    def __init__(self, ss):
        self.spark, self.client = ss.spark, ss.client
        self.streams = type("Streams", (), {"monitor": _NoEvents()})()


def test_the_batches_of_a_stopped_query_whose_events_had_not_come_print_when_its_tail_finishes(ss):
    """`:stop` (and a console sink's stop()) prints the batches written before the end: those whose progress events
    had not reached the client yet are read from the query's own record of its last batches."""
    query = ss.start(ss.source.rate(rows_per_second=20).select("value"), "events_late", sink="memory",
                     trigger="0.5 seconds")
    printed = []
    tail = Tail(_SessionWithoutEvents(ss), query, printed.append, limit=1_000).start(from_start=True)
    try:
        wait_for(lambda: query.progress is not None and query.progress.batch_id >= 3, 60, what="four batches")
    finally:
        query.stop()
    wrote = {p.batch_id: p.sink_rows for p in query.history if p.sink_rows}
    tail.finish(30)
    assert [batch.batch_id for batch in printed] == sorted(wrote)
    assert [batch.total for batch in printed] == [wrote[n] for n in sorted(wrote)]
    values = sorted(row[0] for batch in printed for row in batch.rows.rows)
    assert values == list(range(sum(wrote.values())))  # every row once, none left out
