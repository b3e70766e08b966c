"""What a colon command returns: a Table, a Message or a Block (or a list of them) to show, and what it changes of
the REPL (Exit, SwitchSession, Follow), which the executor carries out. Rendering them as text or JSON is
render.py's job."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:  # pragma: no cover
    from ...client.session import Session


@dataclass
class Table:
    columns: list[str]
    rows: Sequence[Sequence[Any]]
    title: str | None = None
    footer: str | None = None
    # columns that may be left out, least useful first, when the table is wider than the terminal
    droppable: tuple[str, ...] = ()
    # "vertical": one record at a time, whatever the terminal's width (:peek --vertical); "whole": every value
    # whole, however wide (a console sink's truncate=false), the terminal wrapping its lines
    layout: str | None = None

    def without(self, names: set[str]) -> Table:
        keep = [i for i, c in enumerate(self.columns) if c not in names]
        return Table([self.columns[i] for i in keep], [[row[i] for i in keep] for row in self.rows],
                     self.title, self.footer, layout=self.layout)


@dataclass
class Message:
    text: str
    data: dict[str, object] = field(default_factory=dict)  # what --format json shows besides the text
    vi_mode: bool | None = None  # :set vi on|off: the editing mode the executor switches to


@dataclass
class Block:
    """Preformatted text (explain output, raw JSON, charts)."""

    text: str
    data: Any = None


@dataclass
class Exit:
    """Leave the REPL (:quit): the executor asks about the running queries first, as Ctrl-D does."""

    code: int = 0


@dataclass
class SwitchSession:
    """Make the session `opener` opens the current one (:connect); `said(new, previous, left running)` is what to
    show once it is."""

    opener: Callable[[], Session]
    said: Callable[[Session, Session | None, list[str]], NotebookResult]


@dataclass
class Follow:
    """Wait while `waiting()` (:tail --follow); then show `ended()`, or, when Ctrl-C ends the wait, what
    `cancelled()` says (it also undoes what the wait was for)."""

    waiting: Callable[[], bool]
    cancelled: Callable[[], str | None]
    ended: Callable[[], NotebookResult]


NotebookResult = Union[Table, Message, Block, list[Union[Table, Message, Block]], None]
Result = Union[NotebookResult, Exit, SwitchSession, Follow]
