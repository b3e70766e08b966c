"""What the state dir records of a running embedded server, and whether that process is still ours."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .process_tree import Spawned
from .cluster import Cluster
from ..client.processes import is_ours, listens_on, resident_memory
from ..client.connection.remote import Target, local_target

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass
class ServerInfo:
    pid: int
    port: int
    started_at: float
    log: Path
    version: str | None = None
    reused: bool = False
    startup_seconds: float | None = None
    token: str | None = field(default=None, repr=False)
    ready: bool = False
    cluster: Cluster | None = None  # the standalone master and workers it runs on (--workers N)
    driver_memory: str | None = None  # the driver's heap (-Xmx), as given to spark-submit
    class_recording: str | None = None  # where it records its class archive when it stops (class_cache)
    ui_port: int | None = None  # the Spark UI's port, when it was started with ui=True (off by default)
    ended: list[Spawned] = field(default_factory=list)  # what its stop ended besides the JVM and the cluster

    @property
    def auth(self) -> bool:
        return bool(self.token)

    @property
    def uptime(self) -> float:
        return max(0.0, time.time() - self.started_at)

    def target(self, token: str | None = None) -> Target:
        """The server as a client target; its own token unless another is given."""
        if token:
            return local_target(self.port, token=token, token_source="argument")
        return local_target(self.port, token=self.token)

    @property
    def url(self) -> str:
        return local_target(self.port).display

    @property
    def ui_url(self) -> str | None:
        return f"http://127.0.0.1:{self.ui_port}" if self.ui_port else None

    @property
    def memory_bytes(self) -> int | None:
        """The server's resident memory, or None when unknown."""
        return resident_memory(self.pid)


def is_our_server(info: ServerInfo) -> bool:
    """True only when the pid file's process is the server this state dir started: alive, ours (same
    user), the Connect server class with our port on its command line, started when we recorded it,
    and, once it has answered, listening on that port. A reused pid or a decoy fails one of these."""
    if not is_ours(info.pid, info.started_at, [SERVER_CLASS, f"spark.connect.grpc.binding.port={info.port}"]):
        return False
    return not info.ready or holds_port(info)


def holds_port(info: ServerInfo) -> bool:
    """Whether the server's own process (the pid we started) listens on its port. The token goes only
    to that process: another program that took the port while our JVM started must not get it. Where this user
    may not see the process's sockets (never for a process of its own), the pid, checked by is_ours, is trusted."""
    return listens_on(info.pid, info.port) is not False
