"""What a colon command (and the REPL's pyspark and Databricks habits) may use of the REPL: the seam between
the executor and everything it runs. The Executor provides it; commands see only this."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from ..client.session import Session
    from .output.live import Live
    from .commands.registry import Registry


class CommandContext(Protocol):
    namespace: dict[str, Any]  # the user's Python names (spark, ss, their DataFrames)
    interactive: bool  # a terminal, not a script
    vi_mode: bool
    format_override: str | None  # a command's own choice of layout for its result (vertical)
    last_traceback: str | None
    stop_requested: bool  # spark.stop() on the REPL's session: a new one opens once the input ends
    cancelled: threading.Event  # set when the running command is cancelled or abandoned
    opener: Callable[[], Session] | None  # how the current session was opened
    registry: Registry
    confirm: Callable[[str], bool]  # ask a yes/no question (False in scripts)

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

    def switch_session(self, opener: Callable[[], Session]) -> tuple[Session, Session | None, list[str]]:
        """Open a session and make it current; the previous one, and its queries left running."""

    def live(self) -> Live: ...

    def evaluate(self, source: str) -> Any: ...

    def request_exit(self, code: object = None) -> None: ...

    def reattach_command(self) -> str: ...

    def on_cancel(self, hook: Callable[[], str | None]) -> None: ...

    def notice_once(self, key: str, text: str) -> None: ...

    def owns_spark(self, spark: Any) -> bool: ...
