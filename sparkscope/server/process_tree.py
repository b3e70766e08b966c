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
import time
from dataclasses import dataclass
from pathlib import Path

from ..client.errors import ServerError
from ..client.processes import alive, ancestors, marked
from .signals import kill_same, reap, terminate

SERVER_MARK = "SPARKSCOPE_SERVER_HOME"


def mark(home: Path) -> str:
    """The value of SERVER_MARK for the server whose state dir is `home`."""
    return os.path.realpath(home)


@dataclass(frozen=True)
class Spawned:
    """One process a server started, as the system shows it."""

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
    skip = {os.getpid(), *besides, *ancestors()}
    found = [Spawned(process.pid, process.command[:200], process.memory)
             for process in marked(f"{SERVER_MARK}={mark(home)}", besides=skip)]
    return sorted(found, key=lambda process: process.pid)


def end(processes: list[Spawned], grace: float) -> int:
    """SIGTERM to each, SIGKILL after `grace` seconds to those still there (and still the same process: psutil
    checks); how many there were to end."""
    ending = []
    for spawned in processes:
        with contextlib.suppress(ServerError):  # another user's: not ours to end
            process = terminate(spawned.pid)
            if process is not None:
                ending.append(process)
    deadline = time.monotonic() + grace
    while ending and time.monotonic() < deadline:
        ending = [process for process in ending if _still_there(process.pid)]
        if ending:
            time.sleep(0.1)  # polling their end, with a deadline
    for process in ending:
        kill_same(process)
    deadline = time.monotonic() + 5
    while any(_still_there(process.pid) for process in ending) and time.monotonic() < deadline:
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


def _still_there(pid: int) -> bool:
    reap(pid)  # a child of ours (the log writer) is reaped, not left a zombie
    return alive(pid)
