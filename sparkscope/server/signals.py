"""Ending processes the servers of this machine started: SIGTERM, then SIGKILL after a grace period (through psutil,
so that the SIGKILL never reaches a process that took a pid since), and reaping those that are this process's children. What a process is (alive, ours) is client/processes.py's."""

from __future__ import annotations

import contextlib
import os
import time

import psutil

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


def terminate(pid: int) -> psutil.Process | None:
    """SIGTERM to `pid`, through psutil, which holds the process by pid and start time: the later kill() of what it
    returns reaches this process or nothing, never another that took its pid since. None when it is gone; a pid of
    another user is a ServerError."""
    try:
        process = psutil.Process(pid)
        process.terminate()
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        raise ServerError(f"Process {pid} belongs to another user; not stopping it",
                          "Stop the server as the user who started it") from None
    return process


def kill_same(process: psutil.Process) -> None:
    """SIGKILL to `process` if it is still the one that was terminated (psutil checks its start time first)."""
    with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
        process.kill()


def kill(pid: int, grace: float) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds; a pid of another user is a ServerError. True when
    the process ended within the grace period (it could finish what it does on exit). Its end is read with
    client.processes.alive, where a zombie has ended (psutil's wait would wait for another parent to reap it)."""
    process = terminate(pid)
    if process is None:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap(pid)
        if not alive(pid):  # it may have ended after the reap above (a zombie counts as ended): reap it now
            reap(pid)
            return True
        time.sleep(0.1)  # polling its end, with a deadline
    kill_same(process)
    for _ in range(50):
        reap(pid)
        if not alive(pid):
            reap(pid)
            return False
        time.sleep(0.1)
    return False
