"""Ending processes the servers of this machine started: SIGTERM, then SIGKILL after a grace period, and reaping
those that are this process's children. What a process is (alive, ours) is client/processes.py's."""

from __future__ import annotations

import contextlib
import os
import signal
import time

from ..client.errors import ServerError
from ..client.processes import alive


def reap(pid: int) -> None:
    """Collect `pid`'s exit status if it is a child of this process that ended (so it is no zombie of ours)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def child_exited(pid: int) -> bool:
    """A child this process started has ended (reaped here). Unlike is_ours, it never reads the command
    line, which is briefly empty while the child execs (spark-class execs its JVM)."""
    reap(pid)
    return not alive(pid)


def kill(pid: int, grace: float) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds; a pid of another user is a ServerError. True when
    the process ended within the grace period (it could finish what it does on exit)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    except PermissionError:
        raise ServerError(f"Process {pid} belongs to another user; not stopping it",
                          "Stop the server as the user who started it") from None
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap(pid)
        if not alive(pid):  # it may have ended after the reap above (a zombie counts as ended): reap it now
            reap(pid)
            return True
        time.sleep(0.1)  # polling its end, with a deadline
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    for _ in range(50):
        reap(pid)
        if not alive(pid):
            reap(pid)
            return False
        time.sleep(0.1)
    return False


def send(pid: int, sig: int) -> bool:
    """Send `sig` to `pid`; False when it is gone or not this user's."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
