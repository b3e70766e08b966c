"""`:feed SOURCE ROWS`: the seeds' lessons made interactive. It adds one batch of rows to a memory source
(`src = ss.source.memory(...)`), has every running query that reads it process the batch, then shows what changed:
the rows each new batch wrote, the watermark the next batch runs with, and the late rows a batch dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...client.errors import SparkscopeError
from ...client.queries.memory_source import MemorySource, feed_of, reads_feed
from ..rendering.render import watermark as shown_watermark
from ..rendering.results import Block, Message, Result, Table
from .registry import Arg, Complete, Options, Runs, Tail, UsageError, command

if TYPE_CHECKING:  # pragma: no cover
    from ...client.queries.query import Query
    from ..context import CommandContext


@command("feed", "Add one batch of rows to a memory source, let its queries process it, and show what changed",
         args=(Arg("SOURCE", complete=Complete.DATAFRAME), Arg("ROWS", optional=True)), tail=Tail.EXPRESSION,
         runs=Runs.WAITS)
def feed(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    source = ctx.namespace.get(args[0])
    if not isinstance(source, MemorySource):
        raise UsageError(f"'{args[0]}' is not a memory source",
                         f"Make one: {args[0]} = ss.source.memory(\"user STRING, ts TIMESTAMP\")")
    if len(args) < 2:
        raise UsageError(f":feed {args[0]} needs rows", f"e.g. :feed {args[0]} (\"ana\", \"2018-03-02 10:00:00\"), "
                         "(\"bob\", \"2018-03-02 10:05:00\")")
    given = ctx.evaluate(args[1])
    rows: list[object] = list(given) if isinstance(given, (list, tuple)) and (isinstance(given, list) or _several(given)) \
        else [given]
    readers = _readers(ctx, source)
    before = {query.id: _last_reported(query) for query in readers}
    batch = source.add(rows)
    said: list[Table | Message | Block] = [Message(f"Added batch {batch} of {args[0]} ({len(rows)} row{'s' if len(rows) != 1 else ''})"
                                           + ("; no running query reads it (:start one of its .df)" if not readers
                                              else ""))]
    for query in readers:
        query.process_all_available()
        said += _changes(query, before[query.id])
        if query.sink == "memory":  # complete mode's result table: the whole result, after the batch
            result = ctx.session.peek(query, RESULT_ROWS)
            said.append(Table(result.columns, [list(row) for row in result.rows],
                              title=f"{query.name}, its result after batch {query.progress.batch_id}"
                              if query.progress else f"{query.name}, its result", footer=f"({_rows(len(result))})"))
    return said


RESULT_ROWS = 1000  # rows of a complete-mode query's result :feed shows


def _several(given: object) -> bool:
    """A tuple of rows (`:feed src (…), (…)`), as opposed to one row given as a tuple of values."""
    return isinstance(given, tuple) and bool(given) and all(isinstance(item, (tuple, list, dict)) for item in given)


def _readers(ctx: CommandContext, source: MemorySource) -> list[Query]:
    """The running queries of the session that read `source`: by their sources' description, or, before their first
    batch, by the plan the catalog recorded when they started (Spark explains no plan before a first batch)."""
    found = []
    session = ctx.session
    for query in session.streams.running():
        progress = query.progress
        if progress is not None and progress.sources:
            if any(feed_of(s.description) == source.name for s in progress.sources):
                found.append(query)
            continue
        record = session.catalog.get(session.url, query.name)
        if record is not None and record.plan is not None and reads_feed(record.plan, source.name):
            found.append(query)
    return found


def _last_reported(query: Query) -> str:
    """When the query last reported progress (ISO time; "" for never). A query waiting for data reports the batch it
    will run next, with no rows: a batch id alone cannot say which reports came after the rows were added."""
    progress = query.progress
    return progress.timestamp if progress is not None else ""


def _changes(query: Query, since: str) -> list[Table | Message | Block]:
    """What the batches reported after `since` did: their output rows, the late rows they dropped, the watermark."""
    batches = [p for p in query.history if p.timestamp > since]
    said: list[Table | Message | Block] = []
    for progress in batches:
        if not progress.input_rows and not progress.dropped_by_watermark:
            continue  # a batch that only moved the watermark on
        try:
            written = query.batch_rows(progress.batch_id) if query.view else None
        except SparkscopeError as exc:
            said.append(Message(f"{query.name}, batch {progress.batch_id}: {_rows(progress.input_rows)} in; what it "
                                f"wrote could not be read ({exc.message})"))
            written = None
        counted = f"{query.name}, batch {progress.batch_id}: {_rows(progress.input_rows)} in"
        if written is not None and written.rows:
            said.append(Table(written.columns, [list(row) for row in written.rows],
                              title=f"{counted}, {len(written.rows)} out", footer=None))
        elif written is not None:
            said.append(Message(f"{counted}, none out"))
        dropped = progress.dropped_by_watermark
        if dropped:
            said.append(Message(f"{query.name}, batch {progress.batch_id}: {dropped} late row{'s' if dropped != 1 else ''}"
                                f" dropped (its event time at or before the watermark {shown_watermark(progress.watermark)})"))
    latest = query.progress
    watermark = latest.watermark if latest is not None and latest.watermark else None
    if watermark and not watermark.startswith("1970-01-01"):
        said.append(Message(f"{query.name}: watermark {shown_watermark(watermark)} "
                            "(a row at or before it is late from the next batch on)"))
    elif not said and query.sink != "memory":
        said.append(Message(f"{query.name}: processed, no batch wrote rows"))
    return said


def _rows(count: int) -> str:
    return f"{count} row{'s' if count != 1 else ''}"
