"""The REPL's session, which may still be connecting: opening it in the background, switching to another,
and what the user's namespace gets from it."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TextIO

from ..client.errors import SparkscopeError
from ..client.logs import swallowed
from .terminal import reattach_command


class SessionHolder:
    """The REPL's session, which may still be connecting: opening it in the background, switching to another, and
    the user's namespace that it fills (spark, ss)."""

    def __init__(self, out: TextIO | None, err: TextIO | None, interactive: bool,
                 namespace: dict[str, Any] | None = None):
        self._out = out
        self._err = err
        self.interactive = interactive
        # the user's names: the REPL's own, or a notebook kernel's (IPython's user_ns), filled in place
        self.namespace: dict[str, Any] = (namespace if namespace is not None else
                                          {"__name__": "__main__", "__builtins__": __builtins__})
        self._session_future: Future = Future()
        self.opener: Callable[[], Any] | None = None  # how the current session was opened
        self._live: Any = None
        self._live_lock = threading.Lock()
        self._state_hooks: list[Callable[[], None]] = []
        self.startup: str | None = None  # how the embedded server's start goes, while it starts
        self.session_wanted = False  # a command waited for the session while it connected
        self._on_demand: Callable[[], Any] | None = None  # opens the session the first time one is waited for
        self.given: dict[str, Any] = {}  # the names the session gave the namespace, last time (a host takes them back)
        self._demand_lock = threading.Lock()

    @property
    def out(self) -> TextIO:
        return self._out or sys.stdout

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    def connect_on_demand(self, opener: Callable[[], Any]) -> None:
        """Open the session with `opener` only when something first waits for it (a notebook: `%load_ext` connects
        nowhere, so that `%sparkscope --remote URL` can still choose where)."""
        self._on_demand = opener

    def connect_in_background(self, opener: Callable[[], Any]) -> None:
        self._on_demand = None
        self.opener = opener

        def run() -> None:
            try:
                session = opener()
                self._populate(session, watch=False)
                if self.startup is not None and not self.session_wanted:
                    session.server.warm_up()  # a server that just started is cold, and no command of the user waits
                self._session_future.set_result(session)
            except BaseException as exc:  # delivered to whoever needs the session
                self._session_future.set_exception(exc)
                self._state_changed()
                return
            self._state_changed()  # connected: the prompt is usable from here
            with swallowed("starting the live events"):  # their first RPCs take 0.3 s on a server just started
                self._watch(session)

        threading.Thread(target=run, name="sparkscope-connect", daemon=True).start()

    def switch_session(self, opener: Callable[[], Any]) -> tuple[Any, Any, list[str]]:
        """Open a session with `opener` and make it the current one; the previous session is let go
        with its queries still running on their server. Returns the new session, the previous one
        and the names of the queries left running. When opening fails, nothing changes."""
        session = opener()
        old = self.session_or_none()
        left: list[str] = []
        if old is not None:
            with contextlib.suppress(SparkscopeError):  # the old server may be gone
                left = [q.name for q in old.streams.queries() if q.state == "active"]
        alerts_on = self._live.alerts_on if self._live is not None else True
        if self._live is not None:
            self._live.close()
            self._live = None
        self.opener = opener
        self._on_demand = None
        self._session_future = Future()
        self._populate(session)
        if self._live is not None:
            self._live.alerts_on = alerts_on
        self._session_future.set_result(session)
        if old is not None:
            with swallowed("letting the previous session go"):
                old.close(stop_queries=False)
        return session, old, left

    def set_session(self, session: Any) -> None:
        self._populate(session)
        self._session_future.set_result(session)

    def _populate(self, session: Any, watch: bool = True) -> None:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        from .compat.install import install

        install()
        self.given = {"spark": session.spark, "ss": session, "SparkSession": SparkSession, "F": F, "T": T,
                      "window": F.window, "col": F.col, "expr": F.expr, "lit": F.lit}
        self.namespace.update(self.given)
        if watch:
            self._watch(session)

    def _watch(self, session: Any) -> None:
        """Alerts above the prompt from the start, and a toolbar that follows the queries' states."""
        if not self.interactive:
            return
        # the session works without live events; :watch and :tail report the reason
        with contextlib.suppress(SparkscopeError):
            self._start_live(session)
            session.streams.monitor.subscribe(
                lambda event: self._state_changed() if event.kind in ("started", "terminated") else None)

    def _start_live(self, session: Any) -> Any:
        from .rendering.live import Live

        with self._live_lock:  # the connecting thread and a command (:watch, :tail) may both start it
            if self._live is None:
                self._live = Live(lambda: self.out, session)
            return self._live

    def live(self) -> Any:
        """Alerts and tails for this session (started on first use)."""
        return self._start_live(self.session)

    def live_if_started(self) -> Any:
        """The alerts and tails, when something started them; else None."""
        return self._live

    def server_starting(self, elapsed: float, stage: str) -> None:
        """The embedded server is starting (called about 4 times a second): shown in the toolbar."""
        shown = f"{stage}, {elapsed:.0f} s"
        if shown != self.startup:
            self.startup = shown
            self._state_changed()

    def on_state_change(self, hook: Callable[[], None]) -> None:
        """Call `hook` (from any thread) when the connection or a query's state changes."""
        self._state_hooks.append(hook)

    def _state_changed(self) -> None:
        for hook in list(self._state_hooks):
            with swallowed("redrawing after a state change"):
                hook()

    def wait_connected(self) -> Any:
        """Block until the connection attempt ends; its session, or its error raised."""
        return self.session

    @property
    def session(self):
        with self._demand_lock:
            on_demand, self._on_demand = self._on_demand, None
        if on_demand is not None and self.opener is None:
            self.connect_in_background(on_demand)
        return self._session_future.result()

    @property
    def started(self) -> bool:
        """Whether a connection was opened or is being opened (not only offered on demand)."""
        return self.opener is not None

    @property
    def connecting(self) -> bool:
        return not self._session_future.done()

    @property
    def connected(self) -> bool:
        return self._session_future.done() and self._session_future.exception() is None

    def session_or_none(self):
        return self.session if self.connected else None

    def reattach_command(self) -> str:
        session = self.session
        return reattach_command(session.server.target, session.session_id)


def session_opener(remote: str | None, *, profile: str | None = None, session_id: str | None = None,
                   port: int | None = None, reattach: bool = False,
                   on_server_wait: Callable[[float, str], None] | None = None) -> Callable[[], Any]:
    """The function that opens a session as the REPL does: `remote` (sc://…), SPARK_REMOTE, a profile, or the
    embedded server; `on_server_wait(elapsed, stage)` hears how the start of the embedded server goes, when it has
    to be started. Called again (:connect), it opens a new session where the one it opened is gone."""
    from ..client.errors import ConnectionFailed
    from ..server.connecting import open_session as open_here, reattach as rejoin, resolve_target
    from .diagnostics import quiet_pyspark_loggers

    opened: list[str] = []

    def open_session() -> Any:
        # the server's start first: it is the longest wait, and pyspark is imported while it starts
        target = resolve_target(remote, profile=profile, session_id=session_id, on_server_wait=on_server_wait,
                                port=port)
        quiet_pyspark_loggers()
        try:
            session = rejoin(target) if reattach and not session_id else open_here(target)
        except ConnectionFailed as exc:
            # :connect again after the server restarted: the session named at start is gone from it, so
            # a new one (else the hint, "run :connect", would name the command that just failed)
            if not opened or exc.code not in ("session_unknown", "nothing_to_reattach"):
                raise
            session = open_here(target.with_session(None))
        opened.append(session.session_id)
        return session

    return open_session


def opener_from_args(args: Any, on_server_wait: Any = None) -> Any:
    """The function that opens the REPL's session, from the command line's flags."""
    return session_opener(args.remote, profile=args.profile, session_id=args.session_id, port=args.port,
                          reattach=bool(getattr(args, "reattach", False)), on_server_wait=on_server_wait)


def describe_target(args: Any) -> str:
    """What the REPL says it connects to; resolving it checks the URL or profile first."""
    from ..client.connection.remote import resolve

    target = resolve(args.remote, profile=args.profile, session_id=args.session_id)
    return target.display if target else "local server"
