"""A standalone Spark cluster on this machine, from the pip-installed pyspark: Spark's own Master and
Worker classes, the shape of docker-compose.yml without Docker.

Every process binds to 127.0.0.1 (SPARK_LOCAL_IP), runs as its own session leader with its log in the
state dir, and is stopped by its pid after the same checks the server's pid gets (owner, class, port,
start time). The Connect server is then started with `--master spark://127.0.0.1:PORT`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .access import ui_guard
from ..client.errors import ServerError
from ..client.logs import swallowed
from ..client.paths import private_dir, write_private
from .ports import usable_port
from ..client.processes import is_ours
from .signals import child_exited, kill
from .sizing import check_workers
from .spark_install import pyspark_home
from ..client import delete_guard

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass
class Member:
    """One process of the cluster: `port` is what it serves (the master's RPC port, a worker's web UI)."""

    role: str  # master | worker
    pid: int
    port: int
    webui_port: int
    started_at: float
    log: str

    @property
    def needle(self) -> str:
        """What its command line must contain for its pid to be trusted."""
        return f"--webui-port {self.webui_port}"

    @property
    def main_class(self) -> str:
        return MASTER_CLASS if self.role == "master" else WORKER_CLASS

    def alive(self) -> bool:
        return is_ours(self.pid, self.started_at, [self.main_class, self.needle])


@dataclass
class WorkerStatus:
    address: str
    webui: str
    state: str
    cores: int
    cores_used: int
    memory_mb: int
    memory_used_mb: int


@dataclass
class Cluster:
    master: Member
    workers: list[Member]
    ui_key: str | None = field(default=None, repr=False)  # signs requests to the UIs (ui_guard)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master.port}"

    @property
    def webui(self) -> str:
        return f"http://127.0.0.1:{self.master.webui_port}"

    @property
    def members(self) -> list[Member]:
        return [self.master, *self.workers]

    def to_json(self) -> dict:
        return {"master": asdict(self.master), "workers": [asdict(w) for w in self.workers], "ui_key": self.ui_key}

    @classmethod
    def from_json(cls, data: dict) -> Cluster:
        return cls(master=Member(**data["master"]), workers=[Member(**w) for w in data["workers"]],
                   ui_key=data.get("ui_key"))

    def worker_status(self, timeout: float = 3.0) -> list[WorkerStatus]:
        """The workers as the master sees them (its JSON endpoint, which only our signed request may read):
        state, cores and memory."""
        request = urllib.request.Request(f"{self.webui}/json/")
        if self.ui_key:
            request.add_header("Authorization", ui_guard.bearer(self.ui_key))
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - loopback
            data = json.load(response)
        return [WorkerStatus(address=f"{w.get('host')}:{w.get('port')}", webui=str(w.get("webuiaddress", "")),
                             state=str(w.get("state", "?")),
                             cores=int(w.get("cores", 0)), cores_used=int(w.get("coresused", 0)),
                             memory_mb=int(w.get("memory", 0)), memory_used_mb=int(w.get("memoryused", 0)))
                for w in data.get("workers", [])]

    def status_of(self, member: Member, known: list[WorkerStatus]) -> WorkerStatus | None:
        """What the master says of this worker (matched by its web UI port), the newest record first."""
        mine = [w for w in known if w.webui.rstrip("/").endswith(f":{member.webui_port}")]
        alive = [w for w in mine if w.state == "ALIVE"]
        found = alive or mine
        return found[0] if found else None

    def stop(self, grace: float = 10.0) -> None:
        """Workers first (they would try to reconnect), then the master; each only if still ours."""
        for member in [*self.workers, self.master]:
            if member.alive():
                kill(member.pid, grace)


def default_worker_cores(workers: int) -> int:
    return max(1, (os.cpu_count() or 2) // max(1, workers))


def start_cluster(home: Path, workers: int, *, cores: int | None, memory: str, env: dict[str, str],
                  timeout: float, on_wait: Callable[[float, str], None] | None = None) -> Cluster:
    """Start a master and `workers` workers, and wait until every worker has registered."""
    check_workers(workers)
    cores = cores or default_worker_cores(workers)
    folder = private_dir(home / "cluster")
    spark_class = str(pyspark_home() / "bin" / "spark-class")
    begin = time.monotonic()
    # the master's and workers' UIs cannot be turned off: only requests signed with this key are served
    key = ui_guard.new_key()
    properties = folder / "ui.properties"
    write_private(properties, "".join(f"{k} {v}\n" for k, v in ui_guard.filter_settings(key).items()))
    common = ["--properties-file", str(properties)]
    master_port, master_ui = usable_port(), usable_port()
    master = _launch(folder, "master", [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(master_port),
                                        "--webui-port", str(master_ui), *common], master_port, master_ui, env)
    cluster = Cluster(master=master, workers=[], ui_key=key)
    try:
        for index in range(1, workers + 1):
            ui = usable_port()
            work_dir = private_dir(folder / f"worker-{index}")
            cluster.workers.append(_launch(
                folder, "worker", [spark_class, WORKER_CLASS, cluster.master_url, "--host", "127.0.0.1",
                                   "--cores", str(cores), "--memory", memory, "--webui-port", str(ui),
                                   "--work-dir", str(work_dir), *common], 0, ui, env, name=f"worker-{index}"))
        _wait_registered(cluster, workers, begin + timeout, on_wait, begin)
    except BaseException:
        cluster.stop(grace=5)
        raise
    return cluster


def _launch(folder: Path, role: str, cmd: list[str], port: int, webui_port: int, env: dict[str, str],
            name: str | None = None) -> Member:
    log_path = folder / f"{name or role}.log"
    log = delete_guard.open_file(log_path, "ab")  # handed to the process as its stdout
    os.chmod(log_path, 0o600)
    started = time.time()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, umask=0o077)
    finally:
        log.close()
    return Member(role=role, pid=proc.pid, port=port, webui_port=webui_port, started_at=started, log=str(log_path))


def _wait_registered(cluster: Cluster, workers: int, deadline: float, on_wait: Callable[[float, str], None] | None,
                     begin: float) -> None:
    while True:
        for member in cluster.members:
            if child_exited(member.pid):  # our own children: not alive(), whose check can miss one mid-exec
                raise ServerError(f"The cluster's {member.role} exited during startup: {_last_line(member.log)}",
                                  f"See the log: {member.log}")
        with swallowed("asking the master for its workers"):
            alive = [w for w in cluster.worker_status(timeout=1) if w.state == "ALIVE"]
            if len(alive) >= workers:
                return
        if time.monotonic() > deadline:
            raise ServerError(f"The cluster's workers did not register with the master within "
                              f"{deadline - begin:.0f}s", f"See the logs in {Path(cluster.master.log).parent}")
        if on_wait:
            on_wait(time.monotonic() - begin, "starting the cluster")
        time.sleep(0.25)


def _last_line(log: str) -> str:
    try:
        lines = [line for line in Path(log).read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no output"
    errors = [line for line in lines if "Exception" in line or "ERROR" in line]
    return (errors or lines or ["no output"])[-1].strip()[:200]
