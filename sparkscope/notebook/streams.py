"""Outputs that follow queries in their cell, updated in place through the front end's display id: display() of a
streaming DataFrame (each committed batch replaces the last), %watch (every query's rates and durations, and the
alerts), %tail (each batch added below the last).

The cell waits while its output updates, as the REPL's display() does: interrupting the kernel ends the wait and the
updates, never the query, and the output's last line says which ended it, the interrupt or the query.
"""

from __future__ import annotations

import queue
import time
from typing import TYPE_CHECKING, Any

from ..client.errors import SparkscopeError
from ..client.queries.dataframes import is_dataframe
from ..client.queries.tail import Tail, TailBatch
from ..core.compat.databricks import batch_table, start_displayed
from ..core.rendering.live import batch_footer
from ..core.rendering.render import WATCH_COLUMNS, WATCH_TRENDS, error_line, watch_cells
from ..core.rendering.results import Message, Table
from .output import NotebookResult

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import NotebookFrontEnd

STREAM_ROWS = 100  # the rows of a batch a display() shows
TREND = 20  # batches in a %watch trend
ALERTS = 3  # the newest alerts %watch shows under its table
_REFRESH = 1.0  # %watch redraws once a second (the monitor keeps the history: a redraw makes no RPC)


class NotebookDisplay:
    """`display` in a notebook with sparkscope loaded: a DataFrame as a table, a streaming one as a query whose
    batches replace each other in the cell; anything else as IPython shows it."""

    def __init__(self, notebook: NotebookFrontEnd):
        self._notebook = notebook

    def __repr__(self) -> str:
        return ("display(df): a table of a DataFrame, or a streaming DataFrame's batches updating in this cell; "
                "display(anything else) as IPython shows it")

    def __call__(self, *objs: Any, streamName: str | None = None, processingTime: str | None = None,  # noqa: N803
                 checkpointLocation: str | None = None, **kwargs: Any) -> Any:  # noqa: N803
        from IPython.display import display

        if len(objs) != 1 or not is_dataframe(objs[0]):
            return display(*objs, **kwargs)
        df, notebook = objs[0], self._notebook
        session = notebook.session()
        if not df.isStreaming:
            return display(NotebookResult("display", batch_table(df), notebook.as_magics))
        query = start_displayed(session, df, streamName, processingTime, checkpointLocation)
        follow_stream(notebook, query)
        return None


def follow_stream(notebook: NotebookFrontEnd, query: Any) -> None:
    """Show each batch `query` commits in one output of this cell, until the kernel is interrupted or the query
    ends; then say which, and that an interrupted query runs on."""
    from IPython.display import display

    batches: queue.Queue[TailBatch | str] = queue.Queue()
    started = Message(f"{query.name} started: its batches show here as they commit "
                      f"(interrupt the kernel to stop watching; :stop {query.name} ends the query)")
    handle = display(NotebookResult("display", started, notebook.as_magics), display_id=True)
    tail = Tail(notebook.executor.session, query, batches.put, batches.put, limit=STREAM_ROWS)
    tail.start(from_start=True)
    last: list[Any] = [started]
    try:
        while tail.active:  # a fact: the tail ends with its query
            try:
                item = batches.get(timeout=0.25)
            except queue.Empty:
                continue
            # a batch that could not be read is said under the last one
            last = [*last[:1], Message(item)] if isinstance(item, str) else [_batch_table(item)]
            handle.update(NotebookResult("display", last, notebook.as_magics))
        _drain(batches, last, handle, notebook)
        ended = query.state
        note = f"{query.name} ended ({ended}): this output no longer updates."
        failure = query.exception
        if failure is not None:
            note += f" {error_line(SparkscopeError(failure.short))}"
    except KeyboardInterrupt:
        note = (f"Stopped updating: the kernel was interrupted. {query.name} keeps running "
                f"(:stop {query.name} ends it).")
    finally:
        tail.stop()
    handle.update(NotebookResult("display", [*last, Message(note)], notebook.as_magics))


def _drain(batches: queue.Queue[Any], last: list[Any], handle: Any, notebook: NotebookFrontEnd) -> None:
    """The batches that came in before the query ended, the newest shown."""
    newest = None
    while not batches.empty():
        item = batches.get_nowait()
        if not isinstance(item, str):
            newest = item
    if newest is not None:
        last[:] = [_batch_table(newest)]
        handle.update(NotebookResult("display", last, notebook.as_magics))


def _batch_table(batch: TailBatch) -> Table:
    return Table(batch.rows.columns, list(batch.rows.rows), title=f"Batch: {batch.batch_id} ({batch.query}, "
                 f"{time.strftime('%H:%M:%S')})", footer=batch_footer(batch))


def watch(notebook: NotebookFrontEnd, names: list[str]) -> None:
    """%watch [NAME…]: every query's newest batch, rates and durations, with their trends and the alerts, in one
    output that updates once a second until the kernel is interrupted."""
    from IPython.display import display

    session = notebook.session()
    wanted = [session.streams.get(name).name for name in names]
    live = notebook.executor.live()
    alerts: list[str] = []
    live.diverted = alerts.append  # the alerts show under the table instead of in whatever cell ran last
    handle = display(NotebookResult("watch", _watch_table(session, wanted, alerts), notebook.as_magics), display_id=True)
    note = ""
    try:
        while True:
            time.sleep(_REFRESH)  # a redraw a second, as the terminal's dashboard; the interrupt ends it
            handle.update(NotebookResult("watch", _watch_table(session, wanted, alerts), notebook.as_magics))
    except KeyboardInterrupt:
        note = "Stopped watching: the kernel was interrupted. The queries keep running."
    finally:
        live.diverted = None
    handle.update(NotebookResult("watch", [_watch_table(session, wanted, alerts), Message(note)], notebook.as_magics))


def _watch_table(session: Any, names: list[str], alerts: list[str]) -> Table:
    tracks = [t for t in session.streams.monitor.tracks() if not names or t.name in names]
    kafka = any(t.latest is not None and t.latest.offsets_behind is not None for t in tracks)
    measured = any(t.latest is not None and t.latest.latency is not None for t in tracks)
    columns = WATCH_COLUMNS + (["behind"] if kafka else []) + (["p99 latency"] if measured else []) + WATCH_TRENDS
    rows = [watch_cells(track, kafka, TREND, measured) for track in tracks]
    errors = [f"{track.name}: {track.error}" for track in tracks if track.error]
    footer = "\n".join([f"{len(rows)} quer{'y' if len(rows) == 1 else 'ies'}, updated {time.strftime('%H:%M:%S')} "
                        f"({session.streams.monitor.mode}); interrupt the kernel to stop watching",
                        *(f"error: {line}" for line in errors), *alerts[-ALERTS:]])
    return Table(columns, rows, title=f"sparkscope %watch  {session.url}",
                 footer=footer if rows else "No queries yet: start one with :start NAME (this view updates by "
                                            "itself)")
