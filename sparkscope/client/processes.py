"""Processes and ports of this machine, from psutil (Linux, macOS, Windows): whether a pid runs and is still the
process we started, its CPU time and its threads', its memory, which process listens on a port, and which processes
carry a server's mark in their environment. Nothing else in sparkscope asks the operating system about a process;
ending one is sparkscope.server's (server/signals.py), never the SDK's.

Each answer says when it cannot be told (None, or the documented default) instead of guessing: macOS, for one, does
not show another process's memory maps, and Linux alone names threads.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil


START_TIME_SLACK = 10.0  # seconds between our clock reading and the kernel's record of the process start
TASK_THREAD = "Executor task l"  # how Linux names a Spark task thread ("Executor task launch worker…", cut at 15)
BUSY = 0.2  # of a core, over the whole sample: a task computing (with more task slots than cores, each gets
# a share of one), not one waiting or between batches
_GONE = (psutil.NoSuchProcess, psutil.ZombieProcess)


def alive(pid: int) -> bool:
    """Process `pid` runs: a zombie (killed, not yet reaped by its parent) does not; one of another user does."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except _GONE:
        return False
    except psutil.AccessDenied:
        return True


def started_at(pid: int) -> float | None:
    """When `pid` started, as a Unix time, or None when it cannot be told."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """The CPU time `pid` has used so far, user and system, or None when it ended or cannot be read."""
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.Error, OSError):
        return None
    return times.user + times.system


def listens_on(pid: int, port: int) -> bool | None:
    """Whether process `pid` listens on TCP `port` (any address); None when this user may not see its sockets."""
    try:
        connections = psutil.Process(pid).net_connections(kind="tcp")
    except _GONE:
        return False
    except (psutil.AccessDenied, OSError):
        return None
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in connections)


def is_ours(pid: int, started: float, needles: list[str]) -> bool:
    """The process `pid` is alive, runs as this user, has every needle on its command line, and was
    started when we recorded it: a reused pid or a decoy fails one of these. A process this user may not
    read is not ours."""
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            if process.status() == psutil.STATUS_ZOMBIE:
                return False
            command = " ".join(process.cmdline()) + " "
            same_user = process.username() == psutil.Process().username()
            created = process.create_time()
    except (psutil.Error, OSError):
        return False
    if not same_user or not all(needle + " " in command for needle in needles):
        return False
    return abs(created - started) <= START_TIME_SLACK


@dataclass(frozen=True)
class Marked:
    """A process of this user whose environment holds a given entry."""

    pid: int
    command: str
    memory: int | None  # bytes: its proportional share of memory (PSS; RSS where the system has no PSS)


def marked(entry: str, *, besides: set[int]) -> Iterator[Marked]:
    """This user's processes with `entry` (NAME=value) in their environment, but the pids of `besides`."""
    name, _, value = entry.partition("=")
    me = psutil.Process().username()
    for process in psutil.process_iter(["pid", "username"]):
        if process.pid in besides or process.info.get("username") != me:
            continue
        try:
            if process.environ().get(name) != value:
                continue
            command = " ".join(process.cmdline()).strip()
        except (psutil.Error, OSError):  # it ended meanwhile, or is not ours to read
            continue
        yield Marked(process.pid, command, memory(process.pid))


def memory(pid: int) -> int | None:
    """Bytes of memory `pid` holds: its proportional share (PSS) where the system tells it, else its resident set."""
    try:
        process = psutil.Process(pid)
        with contextlib.suppress(psutil.AccessDenied, AttributeError, NotImplementedError):
            pss = getattr(process.memory_full_info(), "pss", None)
            if pss is not None:
                return int(pss)
        return int(process.memory_info().rss)
    except (psutil.Error, OSError):
        return None


def resident_memory(pid: int) -> int | None:
    """`pid`'s resident memory in bytes, or None when it cannot be read."""
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except (psutil.Error, OSError):
        return None


def ancestors() -> list[int]:
    """The pids of this process's parent, its parent's, and so on."""
    try:
        return [parent.pid for parent in psutil.Process().parents()]
    except (psutil.Error, OSError):
        return []


def maps_file(pid: int, path: Path) -> bool | None:
    """Whether `pid` has the file `path` mapped into its memory; None where the system does not say (macOS)."""
    try:
        return any(region.path == str(path) for region in psutil.Process(pid).memory_maps(grouped=True))
    except _GONE:
        return False
    except (psutil.AccessDenied, AttributeError, NotImplementedError, OSError):
        return None


def _thread_cpu(pid: int, name_prefix: str) -> dict[int, float] | None:
    """CPU seconds (user + system) so far of each thread of `pid` whose name starts with `name_prefix`; None where
    threads have no names to tell (only Linux names them: /proc/<pid>/task/<tid>/comm, read here and nowhere
    else)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        threads = psutil.Process(pid).threads()
    except (psutil.Error, OSError):
        return {}
    seconds: dict[int, float] = {}
    for thread in threads:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/task/{thread.id}/comm").read_text().startswith(name_prefix):
                seconds[thread.id] = thread.user_time + thread.system_time
    return seconds


def busy_threads(pid: int, name_prefix: str = TASK_THREAD, window: float = 1.0) -> list[float] | None:
    """The cores each thread of `pid` named `name_prefix`… used over the next `window` seconds, for those busy
    all along (at least BUSY of a core): for a JVM's task threads, the tasks computing now. None where threads
    have no names."""
    before = _thread_cpu(pid, name_prefix)
    if not before:  # no such thread (no task has run lately): nothing computes, and no need to wait to know it
        return None if before is None else []
    time.sleep(window)  # the sample itself: CPU time is counted over an interval
    after = _thread_cpu(pid, name_prefix) or {}
    used = [(after[tid] - before[tid]) / window for tid in after if tid in before]
    return sorted((cores for cores in used if cores >= BUSY), reverse=True)


def ephemeral_port_low() -> int | None:
    """The lowest port the system hands out for outgoing connections (Linux's ip_local_port_range); None when not
    known here."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    return None
