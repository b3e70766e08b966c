"""Who can tell why a server stopped answering: finders registered by port (a Session registers the embedded
server's log reader, which knows an out-of-memory exit), asked before a failure is said as only "unreachable"."""

from __future__ import annotations

from collections.abc import Callable

from .errors import SparkscopeError


# Who can say why the server on a port stopped answering (the embedded server's log knows an out-of-memory exit),
# by port: a failure is explained only by the finder of the server it failed to reach.
_CAUSE_FINDERS: dict[int, list[Callable[[], SparkscopeError | None]]] = {}


def explain_unreachable(port: int, finder: Callable[[], SparkscopeError | None]) -> Callable[[], None]:
    """Ask `finder` why the server on `port` is unreachable before saying only that; returns the way to stop."""
    _CAUSE_FINDERS.setdefault(port, []).append(finder)

    def forget() -> None:
        finders = _CAUSE_FINDERS.get(port, [])
        if finder in finders:
            finders.remove(finder)

    return forget


def cause_at(port: int | None) -> SparkscopeError | None:
    """Why the server on `port` stopped answering, when its finder knows; else None."""
    for finder in list(_CAUSE_FINDERS.get(port or 0, [])):
        try:
            cause = finder()
        except Exception:  # a finder that fails knows nothing: the plain line is still right
            continue
        if cause is not None:
            return cause
    return None
