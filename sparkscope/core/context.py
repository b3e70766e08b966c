"""What a colon command (and the REPL's pyspark and Databricks habits) may use of the REPL: the seam between
the executor and everything it runs. The Executor provides it; commands see only this."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from ..client.session import Session
    from .rendering.live import Live


class CommandDoc(Protocol):
    """What :help shows of a command."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    @property
    def usage(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


class CommandIndex(Protocol):
    """The registry, as :help reads it."""

    @property
    def commands(self) -> Mapping[str, CommandDoc]: ...

    def lookup(self, name: str) -> CommandDoc: ...


class CommandContext(Protocol):
    """Read-only but for the user's namespace: a command returns what it changes (a table's layout, the vi mode,
    leaving, another session, a wait that Ctrl-C ends) in its result, and the executor applies it."""

    @property
    def namespace(self) -> dict[str, object]:
        """The user's Python names (spark, ss, their DataFrames): a command may set one."""

    @property
    def interactive(self) -> bool:
        """A terminal, not a script."""

    @property
    def vi_mode(self) -> bool: ...

    @property
    def fmt(self) -> str:
        """How results are printed: table, json or vertical (--format)."""

    @property
    def last_traceback(self) -> str | None: ...

    @property
    def stop_requested(self) -> bool:
        """spark.stop() on the REPL's session: a new one opens once the input ends."""

    def request_session_stop(self) -> None: ...

    @property
    def cancelled(self) -> threading.Event:
        """Set when the running command is cancelled or abandoned."""

    @property
    def opener(self) -> Callable[[], Session] | None:
        """How the current session was opened."""

    @property
    def registry(self) -> CommandIndex: ...

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question (False in scripts)."""

    @property
    def out(self) -> TextIO: ...

    @property
    def err(self) -> TextIO: ...

    @property
    def session(self) -> Session:
        """The current session (waits while it connects; raises when connecting failed)."""

    @property
    def connecting(self) -> bool: ...

    def session_or_none(self) -> Session | None: ...

    def live(self) -> Live: ...

    def evaluate(self, source: str) -> object: ...

    def reattach_command(self) -> str: ...

    def notice_once(self, key: str, text: str) -> None: ...

    def owns_spark(self, spark: object) -> bool: ...


class ReplContext(CommandContext, Protocol):
    """What the REPL's pyspark habits use besides a command's context: spark.stop() opens a new session."""

    def switch_session(self, opener: Callable[[], Session]) -> tuple[Session, Session | None, list[str]]:
        """Open a session and make it current; the previous one, and its queries left running."""
