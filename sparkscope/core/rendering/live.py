"""The REPL's live side: alerts and tailed batches printed above the prompt while the user types.

Everything here reacts to monitor events. Output goes to the REPL's stdout, which the shell
routes above the prompt (prompt-toolkit's patch_stdout); while `:watch` owns the screen, alerts go
to the dashboard's footer instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from ...client.monitoring.alerts import AlertRules
from ...client.monitoring.monitor import Event
from ..settings import latency_limit_setting, repl_setting
from ...client.queries.tail import Tail, TailBatch
from .render import cell, render
from .results import Table

if TYPE_CHECKING:  # pragma: no cover
    from ...client.queries.query import Query
    from ...client.session import Session


class Live:
    """Alerts and tails of one session; `out` gives the stream they print to (the REPL's stdout, which the
    shell routes above the prompt)."""

    def __init__(self, out: Callable[[], TextIO], session: Session):
        self._out = out
        self.session = session
        self.alerts_on = bool(repl_setting("alerts"))
        self.tails: dict[str, Tail] = {}
        self._truncate: dict[str, int | None] = {}  # per tailed query: cells cut to this many characters
        # while a view owns the output (:watch's screen, a notebook's %watch), alerts and batch lines go to it
        self.diverted: Callable[[str], None] | None = None
        self._rules = AlertRules(self._trigger_seconds, latency_over_ms=latency_limit_setting())
        self._lock = threading.Lock()
        self._unsubscribe = session.streams.monitor.subscribe(self._on_event)

    @property
    def latency_over_ms(self) -> float | None:
        """The p99 latency over which a Kafka query's batch raises an alert (None: no such alert)."""
        return self._rules.latency_over_ms

    @latency_over_ms.setter
    def latency_over_ms(self, limit: float | None) -> None:
        self._rules.latency_over_ms = limit

    def close(self) -> None:
        self._unsubscribe()
        for tail in list(self.tails.values()):
            tail.stop()

    # -- alerts ---------------------------------------------------------------------------------------
    def _trigger_seconds(self, name: str) -> float | None:
        for query in reversed(self.session.streams.known_queries()):
            if query.name == name and query.trigger.kind == "processing":
                return query.trigger.seconds
        return None

    def _on_event(self, event: Event) -> None:
        alerts = self._rules.feed(event)  # always fed, so streaks are right when alerts come back on
        if self.alerts_on:
            for alert in alerts:
                details = f" (details: :exception {alert.query})" if alert.kind == "failed" else ""
                if event.code == "server_gone":
                    details = ". When it is back: :connect, then :restart --lost"
                self.say(f"{alert}{details}")

    def say(self, text: str) -> None:
        diverted = self.diverted
        if diverted is not None:
            diverted(text)
            return
        with self._lock:
            out = self._out()
            out.write(text + "\n")
            out.flush()

    # -- tails ------------------------------------------------------------------------------------------
    def tail(self, query: Query, limit: int = 20, truncate: int | None = None, from_start: bool = False,
             empty: bool = False) -> Tail:
        """Print each new batch of `query` (its first `limit` rows; with `truncate`, each cell cut to that many
        characters, as Spark's console sink does, and WHOLE: every value whole, the terminal wrapping the lines;
        `empty`: batches that wrote nothing too, as their header)."""
        self._truncate[query.name] = truncate
        existing = self.tails.get(query.name)
        if existing is not None and existing.active and existing.query.id == query.id:
            return existing
        tail = Tail(self.session, query, self._print_batch, self.say, limit=limit, empty=empty).start(from_start)
        self.tails[query.name] = tail
        return tail

    def untail(self, name: str | None = None) -> list[str]:
        names = [name] if name else list(self.tails)
        stopped = []
        for key in names:
            tail = self.tails.pop(key, None)
            if tail is not None:
                tail.stop()
                stopped.append(key)
        return stopped

    def finish_tails(self, names: list[str], timeout: float = 10.0) -> None:
        """The queries `names` were stopped: their tails print what came before the end, then stop."""
        for name in names:
            tail = self.tails.pop(name, None)
            if tail is not None:
                tail.finish(timeout)

    def _print_batch(self, batch: TailBatch) -> None:
        if self.diverted is not None:
            self.say(f"{batch.query}: batch {batch.batch_id}, {batch.total} rows")
            return
        cut = self._truncate.get(batch.query)
        rows = [[_cut(value, cut) for value in row] for row in batch.rows.rows] if cut else list(batch.rows.rows)
        table = Table(batch.rows.columns, rows, title=f"Batch: {batch.batch_id} ({batch.query})",
                      footer=batch_footer(batch), layout="whole" if cut == WHOLE else None)
        self.say(render(table))


def batch_footer(batch: TailBatch) -> str:
    """The line under a tailed batch: it counts the rows shown, of how many the batch wrote."""
    what = "rows in the result" if batch.mode == "complete" else "new rows"
    counted = f"{len(batch.rows.rows)} of {batch.total}" if batch.more else f"{batch.total}"
    return f"({counted} {what})"


WHOLE = 0  # truncate=WHOLE: Spark's console sink with truncate=false prints every value whole


def _cut(value: Any, width: int) -> Any:
    """Spark's console sink: a cell longer than `width` shows its first width-3 characters and '...'
    (of the text the table shows: a window is {start, end}, not a Python dict)."""
    text = cell(value)
    if len(text) <= width:
        return value
    return text[: width - 3] + "..."
