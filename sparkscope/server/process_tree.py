"""What a server started: every process whose environment names its state dir, found, measured and ended.

The embedded server's JVM starts Python processes of its own (Connect's foreachBatch workers, `pyspark.daemon`
and its workers, Python data source runners), and none of them ends when the JVM does: they are left with parent
pid 1, 165 MB each. So every process a server's start spawns (the JVM, its log writer, a --workers cluster's
master, workers and executors) gets SERVER_MARK=<state dir> in its environment, and each process the JVM starts
inherits it. A stop ends whatever still carries the mark, by that mark alone: never by a name, never another
user's process, never this one. After a crash (the JVM killed -9), the next start or stop finds what was left the
same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

SERVER_MARK = "SPARKSCOPE_SERVER_HOME"


def mark(home: Path) -> str:
    """The value of SERVER_MARK for the server whose state dir is `home`."""
    return os.path.realpath(home)


@dataclass(frozen=True)
class Spawned:
    """One process a server started, as /proc shows it."""

    pid: int
    command: str  # its command line, cut to fit one line
    memory: int | None  # bytes: its proportional share of memory (PSS; RSS where the kernel has no PSS)

    @property
    def kind(self) -> str:
        """'log writer', 'Python worker' (anything else Python: Spark starts them), 'JVM' (a cluster's executor,
        or the server itself) or 'other'."""
        name = Path(self.command.split(" ", 1)[0]).name
        if "log_writer" in self.command:
            return "log writer"
        if name.startswith("python"):
            return "Python worker"
        return "JVM" if name == "java" else "other"


def spawned_by(home: Path, *, besides: tuple[int, ...] = ()) -> list[Spawned]:
    """This user's processes whose environment names the server of `home`, oldest first (this process, its
    ancestors and `besides` left out)."""
    needle = f"{SERVER_MARK}={mark(home)}".encode()
    skip = {os.getpid(), *besides, *_ancestors()}
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            environ = (entry / "environ").read_bytes()
            if needle not in environ.split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # it ended meanwhile, or is not ours to read
            continue
        found.append(Spawned(int(entry.name), command[:200], _memory(entry)))
    return sorted(found, key=lambda process: process.pid)


def end(processes: list[Spawned], grace: float) -> int:
    """SIGTERM to each, SIGKILL after `grace` seconds to those still there; how many there were to end."""
    pids = [p.pid for p in processes if _signal(p.pid, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if _alive(pid)]
        if pids:
            time.sleep(0.1)  # polling their end, with a deadline
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(processes)


def describe(processes: list[Spawned]) -> str:
    """'3 Python workers (498 MB), the log writer' and the like: what a server holds beside its JVM."""
    parts = []
    for kind in ("Python worker", "JVM", "other"):
        group = [p for p in processes if p.kind == kind]
        if group:
            memory = sum(p.memory or 0 for p in group)
            plural = {"Python worker": "Python workers", "JVM": "JVMs", "other": "others"}[kind]
            parts.append(f"{len(group)} {kind if len(group) == 1 else plural} ({memory / 2**20:,.0f} MB)")
    if any(p.kind == "log writer" for p in processes):
        parts.append("the log writer")
    return ", ".join(parts) or "nothing"


def _memory(entry: Path) -> int | None:
    try:
        for line in (entry / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        for line in (entry / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _ancestors() -> list[int]:
    pids, pid = [], os.getppid()
    while pid > 1:
        pids.append(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # not our child: nothing to reap
        os.waitpid(pid, os.WNOHANG)  # a child of ours (the log writer) is reaped, not left a zombie
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1]
    except OSError:
        return False
    return state != "Z"
