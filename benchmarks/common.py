"""Shared pieces of the benchmarks: a private server on a free port, medians, an RPC counter."""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@contextlib.contextmanager
def private_server() -> Iterator[str]:
    """A fresh embedded server in a temporary home on a free port; stopped (by pid) afterwards."""
    with private_server_info() as info:
        yield f"sc://localhost:{info.port}"


@contextlib.contextmanager
def private_server_info(conf: dict[str, str] | None = None) -> Iterator:
    """private_server, yielding its ServerInfo (pid, port, log)."""
    from sparkscope.client.connection.remote import TOKEN_ENV
    from sparkscope.server.ports import free_port
    from sparkscope.server.local import LocalServer

    with tempfile.TemporaryDirectory() as home:
        server = LocalServer(Path(home))
        info = server.start(port=free_port(), conf={"spark.sql.shuffle.partitions": "2", **(conf or {})})
        # Its token (random, as for every embedded server) reaches sparkscope and plain pyspark alike, in
        # this process and in the ones it starts, through the environment: never on a command line.
        saved = os.environ.get(TOKEN_ENV)
        os.environ[TOKEN_ENV] = info.token or ""
        try:
            yield info
        finally:
            if saved is None:
                os.environ.pop(TOKEN_ENV, None)
            else:
                os.environ[TOKEN_ENV] = saved
            server.stop()


def heap_used_mb(pid: int) -> float:
    """The JVM's used heap after a full collection (jcmd GC.run, then GC.heap_info): what it keeps alive."""
    import re
    import subprocess

    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60, check=True)
    text = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    match = re.search(r"total \d+K, used (\d+)K", text)
    if not match:
        raise RuntimeError(f"no heap figure in jcmd's answer: {text[:200]}")
    return int(match.group(1)) / 1024


def rss_mb(pid: int) -> float:
    """A process's resident set size, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    """The pids of a process's direct children (the server's Python workers)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def median_time(fn: Callable[[], object], runs: int = 5) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


class RpcCounter:
    """Counts the gRPC calls one pyspark Connect client makes, by wrapping its stub's methods."""

    ACKS = ("ReleaseExecute",)  # sent by pyspark after each streamed response, asynchronously

    def __init__(self, spark) -> None:
        self.count = 0
        self.by_method: dict[str, int] = {}
        self._lock = threading.Lock()
        from sparkscope.client._pyspark import rpc_stub

        stub = rpc_stub(spark)
        for name in dir(stub):
            method = getattr(stub, name)
            if name[:1].isupper() and callable(method):
                wrapped = self._wrap(method)
                wrapped.rpc = name
                setattr(stub, name, wrapped)

    def _wrap(self, method):
        name = getattr(method, "_method", None) or getattr(method, "__name__", "")

        def counted(*args, **kwargs):
            with self._lock:
                self.by_method[counted.rpc] = self.by_method.get(counted.rpc, 0) + 1
                if counted.rpc not in self.ACKS:
                    self.count += 1
            return method(*args, **kwargs)

        counted.rpc = name

        return counted

    def acks(self) -> int:
        return sum(self.by_method.get(name, 0) for name in self.ACKS)

    def rate_over(self, seconds: float) -> tuple[float, float]:
        """(requests per second, acknowledgements per second) over the next `seconds`."""
        before, before_acks = self.count, self.acks()
        time.sleep(seconds)
        return (self.count - before) / seconds, (self.acks() - before_acks) / seconds
