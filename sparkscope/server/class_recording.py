"""The server that records the class archive (class_cache.py), off the path of the user's first start and
first answers: started in the background at the lowest CPU priority once the user's server is idle, in a
state dir of its own beside the archive, it answers one query so that those classes are recorded too, then
stops cleanly, and its recording becomes the archive.

    python -m sparkscope.server.class_recording FOLDER [PID]   (class_cache.record_later runs it)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from .class_cache import RECORDER_LOCK
from ..client import delete_guard
from ..client.logs import swallowed
from ..client.paths import private_dir
from .ports import free_port
from ..client.processes import alive, cpu_seconds
from .local import LocalServer

IDLE_SHARE = 0.1  # the user's server counts as idle below a tenth of a core
IDLE_WINDOW = 2.0  # over this many seconds
MAX_WAIT = 300.0  # a server busy for longer is not waited for (the recording runs at nice 19 anyway)
NO_PROC_WAIT = 60.0  # where the CPU time of another process cannot be read


def wait_until_idle(pid: int, lock: Path) -> None:
    """Until the user's server (`pid`) has been idle for IDLE_WINDOW: its first session and its first
    queries, JIT-compiled as they run, go first. The lock is touched meanwhile (it is not abandoned)."""
    before = cpu_seconds(pid)
    if before is None:  # it stopped already (nothing to wait for), or its CPU time cannot be read
        if alive(pid):
            time.sleep(NO_PROC_WAIT)
        return
    deadline = time.monotonic() + MAX_WAIT
    while time.monotonic() < deadline:
        time.sleep(IDLE_WINDOW)
        delete_guard.touch(lock)
        now = cpu_seconds(pid)
        if now is None or now - before < IDLE_SHARE * IDLE_WINDOW:
            return
        before = now


def record(folder: Path, after: int | None = None) -> None:
    server = LocalServer(private_dir(folder / "recorder"))
    try:
        if after is not None:
            wait_until_idle(after, folder / RECORDER_LOCK)
        if after is not None and not alive(after):
            return  # the server it waited for has stopped: nothing of its start outlives its stop
        info = server.start(port=free_port(), timeout=600)
        try:
            with swallowed("running the recording server's query"):  # the start's classes are the most
                from pyspark.sql import SparkSession

                from ..client.session_server import warm_up_query

                spark = SparkSession.builder.remote(f"sc://localhost:{info.port}/;token={info.token}").create()
                warm_up_query(spark)
                spark.stop()
        finally:
            server.stop()
    finally:
        server.stop(grace=3)  # a recording cut short by the stop of the server it served (SIGTERM): its JVM too
        delete_guard.remove_file(folder / RECORDER_LOCK)


def _stop_on_sigterm() -> None:
    """SIGTERM (the stop of the server whose start began this) unwinds record(), which stops the recording JVM."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


if __name__ == "__main__":
    _stop_on_sigterm()
    os.nice(19)  # before the JVM starts, which inherits it: the user's own server comes first
    record(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
