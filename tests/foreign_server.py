"""A Spark Connect server that is not sparkscope's: started from a venv of its own (`make test` builds them, see
the Makefile's SERVER_VENVS) with that venv's own spark-submit and Python, as a cluster's admin would start one,
on a free port, and stopped by its pid.

- `bare`: the pyspark that sparkscope pins, installed without extras. This is the official `apache/spark`
  image's Python: no pandas, no pyarrow, no grpcio.
- `spark-4.0`: the oldest Spark line sparkscope supports, whose Python is made from
  server-config/requirements.txt (what server-config/Dockerfile adds to the official image).
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venv-servers"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STARTED = "Spark Connect server started"


@dataclass
class ForeignServer:
    name: str
    venv: Path
    port: int
    process: subprocess.Popen
    log: Path

    @property
    def url(self) -> str:
        return f"sc://localhost:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


def venv_of(name: str) -> Path:
    venv = VENVS / name
    if not (venv / ".installed").exists():
        raise RuntimeError(f"{venv} is missing: `make test` builds it (make server-venvs)")
    return venv


def start(name: str, workdir: Path, conf: dict[str, str] | None = None) -> ForeignServer:
    """Start the server of venv `name` on a free port; return once it answers (or raise with its log's tail)."""
    from sparkscope.client.connection.probe import try_probe
    from sparkscope.server.ports import free_port
    from sparkscope.client.connection.remote import local_target

    venv = venv_of(name)
    python = venv / "bin" / "python"
    spark_home = subprocess.run([str(python), "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
                                capture_output=True, text=True, check=True).stdout.strip()
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}-server.log"
    settings = {"spark.connect.grpc.binding.port": str(port), "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false", **(conf or {})}
    command = [str(venv / "bin" / "spark-submit"), "--class", SERVER_CLASS]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    command.append("spark-internal")
    env = {key: value for key, value in os.environ.items()
           if key not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYTHONPATH", "VIRTUAL_ENV", "SPARK_CONNECT_AUTHENTICATE_TOKEN")}
    env.update(SPARK_HOME=spark_home, PYSPARK_PYTHON=str(python), PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = ForeignServer(name, venv, port, process, log)
    target = local_target(port)
    try:
        wait_for(lambda: process.poll() is not None or try_probe(target, timeout=2) is not None, timeout=240,
                 every=0.5, what=f"the {name} server on port {port}")
        if process.poll() is not None:
            raise RuntimeError(f"the {name} server exited ({process.returncode}): "
                               + "\n".join(log.read_text(errors="replace").splitlines()[-20:]))
    except BaseException:
        server.stop()
        raise
    return server
