"""Leaving the REPL: what happens to the running queries (ask, stop or leave them), and what stays behind."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..client.errors import SparkscopeError
from ..client.logs import swallowed
from .terminal import command_name

if TYPE_CHECKING:  # pragma: no cover
    from .context import CommandContext
    from .rendering.live import Live

LEAVE_DEADLINE = 5.0


def leave(ctx: CommandContext, live: Live | None, detach: bool | None) -> str | None:
    """Close the REPL's session (and its alerts and tails, `live`). detach=None asks (interactive). Returns a
    message for the user."""
    from ..client.deadline import within

    session = ctx.session_or_none()
    if session is None:
        return None
    if live is not None:
        live.close()
    try:  # a frozen network must not hold Ctrl-D
        queries = within(LEAVE_DEADLINE, session.streams.running, "listing running queries")
    except SparkscopeError as exc:  # a busy server: what this process knows runs is asked about, not dropped
        queries = [q for q in session.streams.known_queries() if q.known_state() is None]
        if _server_gone(session, exc):  # nothing to stop: the server's end ended them
            session.close(stop_queries=False)
            return (f"The server went away ({exc.message}): {', '.join(q.name for q in queries)} ended with it."
                    if queries else None)
        if queries:
            ctx.err.write(f"note: the server did not list its running queries ({exc.message}); these are the ones "
                          "this process knows of.\n")
            ctx.err.flush()
    running = [q.name for q in queries]
    found = [] if ctx.interactive else [q for q in queries if not session.streams.started_here(q)]
    if found and not detach:
        # a script stops only what it started: queries it found (reattached, another client's) run on
        stopped: list[str] = []
        with swallowed("stopping the script's queries"):
            for query in queries:
                if session.streams.started_here(query):
                    query.stop()
                    stopped.append(query.name)
        session.close(stop_queries=False)
        ours = [q.name for q in queries if session.streams.started_here(q)]
        return "\n".join(filter(None, [_stopped_message(ours, stopped, session.session_id),
                                        f"Left running: {', '.join(q.name for q in found)} (this script did "
                                        "not start them)."]))
    if running and detach is None:
        names = ", ".join(running)
        detach = not ctx.confirm(f"{len(running)} quer{'y is' if len(running) == 1 else 'ies are'} still "
                                  f"running ({names}). Stop {'it' if len(running) == 1 else 'them'}? [y/N] ")
    message: str | None
    if running and detach:
        message = (f"Left {len(running)} quer{'y' if len(running) == 1 else 'ies'} running on the server. "
                   f"Reattach with: {ctx.reattach_command()}\n{idle_timeout_warning(session)}")
        session.close(stop_queries=False)
    else:  # nothing to leave running, or the user chose to stop it
        stopped = session.close(stop_queries=True)
        message = _stopped_message(running, stopped, session.session_id)
    staying = _embedded_server_note(session) if ctx.interactive else None
    return "\n".join(m for m in (message, staying) if m) or None

def _stopped_message(running: list[str], stopped: list[str], session_id: str) -> str | None:
    """What leaving stopped, and what the server did not stop in time (it runs on, and `:stop NAME` in a new
    REPL stops it where it was left)."""
    left = [name for name in running if name not in stopped]
    lines = [f"Stopped {', '.join(stopped)}." if stopped else None]
    if left:
        lines.append(f"The server did not stop {', '.join(left)} in time: {'it runs' if len(left) == 1 else 'they run'}"
                     f" on in session {session_id[:8]}. Start sparkscope again and :stop NAME to end "
                     f"{'it' if len(left) == 1 else 'them'}.")
    return "\n".join(line for line in lines if line) or None


def _server_gone(session: Any, error: SparkscopeError) -> bool:
    """The listing failed because the server is gone (refused, restarted), not because it is slow to answer."""
    from ..client.errors import ConnectionFailed, DeadlineExceeded, ServerUnreachable

    if not isinstance(error, ConnectionFailed) or isinstance(error, DeadlineExceeded):
        return False
    explained = session.client.explain_error(error)
    return isinstance(explained, ServerUnreachable) or explained.code in ("server_restarted", "session_changed",
                                                                          "server_exited_out_of_memory")


def _embedded_server_note(session: Any) -> str | None:
    """Say what stays behind: the embedded server keeps running (so queries can), and its memory."""
    if session.server.target.source != "local" and session.server.target.token_source != "state":
        return None  # not this state dir's embedded server
    from ..server.local import LocalServer
    from .rendering.render import size

    info = LocalServer().running()
    if info is None:
        return None
    memory = info.memory_bytes
    held = f", {size(memory)}" if memory else ""
    return (f"The embedded Spark Connect server keeps running (pid {info.pid}{held}); "
            f"stop it with: {command_name()} server stop")




def idle_timeout_warning(session: Any) -> str:
    """One line: when the server will stop the queries of the session just left, and what to do."""
    from .rendering.render import age

    seconds, known = session.server.idle_timeout()
    after = age(seconds) if known else f"{age(seconds)} (Spark's default; this server did not say)"
    return (f"warning: the server stops them once the session has had no client for {after}. Reattach before "
            f"then, keep a sparkscope attached, or raise spark.connect.session.manager.defaultSessionTimeout "
            f"on the server.")


class Leave:
    """`exit` / `quit` in the REPL's namespace: calling either leaves as Python's do, by raising SystemExit (nothing
    after it runs); the executor then asks to leave like :quit."""

    def __call__(self, code: object = None) -> None:
        raise SystemExit(code)

    def __repr__(self) -> str:
        return "Use exit(), quit(), :quit or Ctrl-D to leave"
