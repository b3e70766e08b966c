"""Processes and ports of this machine (Linux /proc): whether a pid is still the process we started,
stopping it, its CPU time and its threads', and which process listens on a port (free ports are ports.py's)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from ..client.errors import ServerError

START_TIME_SLACK = 10.0  # seconds between our clock reading and the kernel's record of the process start


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def child_exited(pid: int) -> bool:
    """A child this process started has ended (reaped here). Unlike is_ours, it never reads the command
    line, which is briefly empty while the child execs (spark-class execs its JVM)."""
    _reap(pid)
    return not _pid_alive(pid)


def _process_start(pid: int) -> float | None:
    """When the kernel started `pid`, as a Unix time (Linux /proc), or None when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
        ticks = int(fields[19])  # field 22 of stat: start time in clock ticks after boot
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def cpu_seconds(pid: int) -> float | None:
    """The CPU time `pid` has used so far, user and system (Linux /proc), or None when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # fields 14, 15: utime, stime
    except (OSError, ValueError, IndexError):
        return None


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP `port` (any address), from /proc/net/tcp{,6}."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(cols[9])
    return inodes


def listens_on(pid: int, port: int) -> bool:
    wanted = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not wanted:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
    return False


def is_ours(pid: int, started_at: float, needles: list[str]) -> bool:
    """The process `pid` is alive, runs as this user, has every needle on its command line, and was
    started when we recorded it: a reused pid or a decoy fails one of these. Without /proc (macOS),
    the pid file is trusted."""
    if not _pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace") + " "
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return not Path("/proc/self").exists()
    if owner != os.getuid() or not all(needle + " " in cmdline for needle in needles):
        return False
    started = _process_start(pid)
    return started is None or abs(started - started_at) <= START_TIME_SLACK


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
        _reap(pid)
        if not _pid_alive(pid):
            return True
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    for _ in range(50):
        _reap(pid)
        if not _pid_alive(pid):
            return False
        time.sleep(0.1)
    return False


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


TASK_THREAD = "Executor task l"  # how Linux names a Spark task thread ("Executor task launch worker…", cut at 15)
BUSY = 0.2  # of a core, over the whole sample: a task computing (with more task slots than cores, each gets
# a share of one), not one waiting or between batches


def _thread_cpu(pid: int, name_prefix: str) -> dict[str, int]:
    """CPU ticks (user + system) so far of each thread of `pid` whose name starts with `name_prefix`."""
    ticks: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if (task / "comm").read_text().startswith(name_prefix):
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                ticks[task.name] = int(fields[11]) + int(fields[12])
    return ticks


def busy_threads(pid: int, name_prefix: str = TASK_THREAD, window: float = 1.0) -> list[float]:
    """The cores each thread of `pid` named `name_prefix`… used over the next `window` seconds, for those busy
    all along (at least BUSY of a core): for a JVM's task threads, the tasks computing now."""
    before = _thread_cpu(pid, name_prefix)
    if not before:  # no such thread (no task has run lately): nothing computes, and no need to wait to know it
        return []
    time.sleep(window)  # the sample itself: CPU time is counted over an interval
    after = _thread_cpu(pid, name_prefix)
    tick = os.sysconf("SC_CLK_TCK")
    used = [(after[tid] - before[tid]) / tick / window for tid in after if tid in before]
    return sorted((cores for cores in used if cores >= BUSY), reverse=True)
