"""`:watch`: a full-screen dashboard of the session's queries, like the Spark UI's streaming tab.

It reads only the monitor's in-memory history, so a redraw costs no RPC and never waits on the
server; it redraws when an event arrives (and once a second for the clock). Stopping a query runs
on a worker thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from prompt_toolkit.application import Application
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.styles import Style

from ...client.monitoring.monitor import Monitor, Track
from .charts import progress_chart_lines
from .render import behind, duration_ms, error_line, latency_ms, rate, truncate, watch_cells, watermark

HELP = [
    "↑/↓ or k/j   select a query",
    "Enter        details and charts of the selected query",
    "s            stop the selected query (asks first)",
    "t            what the selected query's state holds (:state NAME, first rows)",
    "p            pause / resume updates",
    "?            this help",
    "q or Esc     back (from the list: back to the prompt)",
]
STYLE = Style.from_dict({"title": "reverse bold", "header": "bold", "selected": "reverse", "failed": "ansired",
                         "stopped": "ansibrightblack", "footer": "reverse", "notice": "ansiyellow"})


class Dashboard:
    def __init__(self, monitor: Monitor, names: list[str] | None, stop_query: Callable[[str], str],
                 title: str = "sparkscope :watch", output: Any = None, input: Any = None,
                 read_state: Callable[[str, int], str] | None = None):
        self.monitor = monitor
        self.names = names or None
        self.stop_query = stop_query
        self.read_state = read_state  # (name, width) -> the state table as text, or one error line
        self.state_text = ""
        self.title = title
        self.selected = 0
        self._top = 0  # the first query the list shows, when it holds more than the terminal
        self.view = "list"  # list | detail | state | help
        self.paused = False
        self.confirming: str | None = None
        self.message = ""
        self._frozen: list[Track] | None = None
        self.app: Application[None] = Application(layout=self._layout(), key_bindings=self._keys(), full_screen=True, style=STYLE,
                               refresh_interval=1.0, min_redraw_interval=0.5, mouse_support=False, output=output, input=input)

    # -- data ---------------------------------------------------------------------------------------
    def tracks(self) -> list[Track]:
        if self.paused and self._frozen is not None:
            return self._frozen
        tracks = self.monitor.tracks()
        if self.names:
            tracks = [t for t in tracks if t.name in self.names or t.id in self.names]
        return tracks

    def current(self) -> Track | None:
        tracks = self.tracks()
        if not tracks:
            return None
        self.selected = max(0, min(self.selected, len(tracks) - 1))
        return tracks[self.selected]

    def show(self, text: str) -> None:
        """A line for the footer (an alert, a tailed batch), from any thread."""
        self.message = text
        self.app.invalidate()

    # -- drawing ----------------------------------------------------------------------------------------
    def _width(self) -> int:
        return self.app.output.get_size().columns

    def _height(self) -> int:
        return self.app.output.get_size().rows

    def _title(self):
        stale = self.monitor.stale_since
        state = ("paused" if self.paused else f"live ({self.monitor.mode})" if stale is None
                 else f"NOT LIVE: no answer since {time.strftime('%H:%M:%S', time.localtime(stale))}")
        text = f" {self.title} — {len(self.tracks())} quer{'y' if len(self.tracks()) == 1 else 'ies'} — {state} "
        return [("class:title", text.ljust(self._width()))]

    def _footer(self):
        if self.confirming:
            return [("class:footer", f" Stop {self.confirming}? [y/n] ".ljust(self._width()))]
        keys = " q back  ↑↓ select  Enter details  t state  s stop  p pause  ? help "
        text = f" {self.message} |{keys}" if self.message else keys
        return [("class:footer", truncate(text, self._width()).ljust(self._width()))]

    def _body(self):
        if self.view == "help":
            return [("", "\n".join(["", *HELP]))]
        if self.view == "detail":
            return self._detail()
        if self.view == "state":
            return [("", "\n" + self.state_text)]
        return self._list()

    def _list(self):
        width = self._width()
        tracks = self.tracks()
        if not tracks:
            return [("", "\n  No queries yet: start one with :start NAME (this view updates by itself).")]
        spark_w = max(6, min(20, (width - 110) // 3))
        kafka = any(t.latest is not None and t.latest.offsets_behind is not None for t in tracks)
        measured = any(t.latest is not None and t.latest.latency is not None for t in tracks)
        header = (f"  {'query':<16} {'state':<7} {'batch':>6} {'input/s':>9} {'proc/s':>9} {'duration':>9} "
                  f"{'watermark':<19} {'state rows':>10} {'dropped':>7}  " + (f"{'behind':>9}  " if kafka else "") +
                  (f"{'p99 latency':>11}  " if measured else "") +
                  f"{'input/s':<{spark_w}} {'proc/s':<{spark_w}} {'duration':<{spark_w}}")
        out = [("class:header", truncate(header, width) + "\n")]
        notices = self.monitor.notices[-2:]
        room = max(2, self._height() - 3 - 2 * len(notices))  # title, header, footer; a blank line and a note each
        shown = self._scrolled(tracks, room)
        if shown.start:
            out.append(("class:notice", f"  ↑ {shown.start} more\n"))
        for index in shown:
            track = tracks[index]
            name, state, batch, inputs, processed, duration, mark, state_rows, dropped, *rest = watch_cells(
                track, kafka, spark_w, measured)
            line = (f"{'>' if index == self.selected else ' '} {truncate(name, 16):<16} {state:<7} {batch:>6} "
                    f"{inputs:>9} {processed:>9} {duration:>9} {mark:<19} {state_rows:>10} {dropped:>7}  "
                    + (f"{rest.pop(0):>9}  " if kafka else "") + (f"{rest.pop(0):>11}  " if measured else "")
                    + " ".join(rest))
            style = "class:selected" if index == self.selected else (
                "class:failed" if track.state == "failed" else "class:stopped" if track.state == "stopped" else "")
            out.append((style, truncate(line, width) + "\n"))
            if track.error:
                out.append(("class:failed", truncate(f"    error: {track.error}", width) + "\n"))
        if shown.stop < len(tracks):
            out.append(("class:notice", f"  ↓ {len(tracks) - shown.stop} more\n"))
        for notice in notices:
            out.append(("class:notice", "\n" + truncate(f"note: {notice}", width)))
        return out

    def _scrolled(self, tracks: list, room: int) -> range:
        """The tracks the list shows in `room` lines: a window that keeps the selected one in view (a query with an
        error takes two lines), and a line saying how many more are above or below it."""
        def lines(first: int, last: int) -> int:
            return sum(2 if tracks[i].error else 1 for i in range(first, last)) + (first > 0) + (last < len(tracks))

        self._top = min(self._top, self.selected)
        while self._top < self.selected and lines(self._top, self.selected + 1) > room:
            self._top += 1
        stop = self.selected + 1
        while stop < len(tracks) and lines(self._top, stop + 1) <= room:
            stop += 1
        return range(self._top, stop)

    def _detail(self):
        track = self.current()
        if track is None:
            self.view = "list"
            return self._list()
        width = self._width()
        history = list(track.history)
        p = track.latest
        lines = [f" {track.name}  id {track.id}  {track.state}" + (f"  error: {track.error}" if track.error else "")]
        if p is None:
            lines.append("\n No progress yet: a query reports after its first batch.")
            return [("", "\n".join(lines))]
        lines.append(f" batch {p.batch_id}   input {rate(p.input_rows_per_second)}/s   processed "
                     f"{rate(p.processed_rows_per_second)}/s   duration {duration_ms(p.batch_duration_ms)}   "
                     f"watermark {watermark(p.watermark)}   state rows {p.state_rows}   "
                     f"dropped {p.dropped_by_watermark}"
                     + (f"   behind {behind(p.offsets_behind)} records" if p.offsets_behind is not None else ""))
        if p.latency is not None:
            lines.append(f" latency {p.latency} (max {latency_ms(p.latency.max_ms)}, {p.latency.records:,} records of "
                         f"batch {p.latency.batch}): from each record's Kafka timestamp to sparkscope's sink")
        chart_height = max(3, min(8, (self._height() - 18) // 2))
        lines.append("")
        lines += progress_chart_lines(history, width - 2, chart_height)
        return [("", "\n".join(line[:width] for line in lines))]

    def _layout(self) -> Layout:
        return Layout(HSplit([
            Window(FormattedTextControl(self._title), height=1),
            Window(FormattedTextControl(self._body), wrap_lines=False),
            Window(FormattedTextControl(self._footer), height=1),
        ]))

    # -- keys -------------------------------------------------------------------------------------------
    def _keys(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("up")
        @kb.add("k")
        def _(event) -> None:
            self.selected = max(0, self.selected - 1)

        @kb.add("down")
        @kb.add("j")
        def _(event) -> None:
            self.selected = min(max(0, len(self.tracks()) - 1), self.selected + 1)

        @kb.add("enter")
        def _(event) -> None:
            if self.current() is not None:
                self.view = "detail"

        @kb.add("t")
        def _(event) -> None:
            track = self.current()
            if track is not None and self.read_state is not None:
                self.view, self.state_text = "state", f" reading the state of {track.name}…"
                threading.Thread(target=self._read_state, args=(track.name,), daemon=True).start()

        @kb.add("?")
        def _(event) -> None:
            self.view = "list" if self.view == "help" else "help"

        @kb.add("q")
        @kb.add("escape", eager=True)
        @kb.add("c-c")
        def _(event) -> None:
            if self.confirming:
                self.confirming = None
            elif self.view != "list":
                self.view = "list"
            else:
                event.app.exit()

        self._add_actions(kb)
        return kb

    def _add_actions(self, kb: KeyBindings) -> None:
        """Pause, and stopping the selected query (asked first)."""

        @kb.add("p")
        def _(event) -> None:
            self.paused = not self.paused
            self._frozen = self.tracks() if self.paused else None
            self._frozen = [_copy(t) for t in self._frozen] if self._frozen else self._frozen
            self.message = "paused" if self.paused else ""

        @kb.add("s")
        def _(event) -> None:
            track = self.current()
            if track is not None and track.state == "active":
                self.confirming = track.name
            elif track is not None:
                self.message = f"{track.name} is not running ({track.state})"

        @kb.add("y")
        def _(event) -> None:
            if self.confirming:
                name, self.confirming = self.confirming, None
                self.message = f"stopping {name}…"
                threading.Thread(target=self._stop, args=(name,), daemon=True).start()

        @kb.add("n")
        def _(event) -> None:
            self.confirming = None

    def _stop(self, name: str) -> None:
        try:
            self.message = self.stop_query(name)
        except Exception as exc:  # shown in the footer; the dashboard keeps running
            self.message = error_line(exc)
        self.app.invalidate()

    def _read_state(self, name: str) -> None:
        try:
            self.state_text = self.read_state(name, self._width()) if self.read_state else ""
        except Exception as exc:  # shown in the view; the dashboard keeps running
            self.state_text = error_line(exc)
        self.app.invalidate()

    # -- running ----------------------------------------------------------------------------------------
    def run(self) -> None:
        def redraw(event) -> None:
            if not self.paused:
                self.app.invalidate()

        unsubscribe = self.monitor.subscribe(redraw)
        started = time.time()
        try:
            self.app.run()
        finally:
            unsubscribe()
        self.seconds = time.time() - started


def _copy(track: Track) -> Track:
    copy = Track(track.id, track.name, track.state, track.error, track.idle_since)
    copy.history.extend(track.history)
    return copy
