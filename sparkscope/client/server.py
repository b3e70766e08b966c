"""The embedded local Spark Connect server: a JVM started from the pip-installed pyspark.

It runs as its own process (so queries outlive the REPL and a later REPL can reattach), bound to
127.0.0.1, with its pid, port and log under the state directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import ServerError
from .paths import server_config_dir, state_dir
from .probe import port_open, try_probe
from .remote import DEFAULT_PORT, TOKEN_ENV, Target, local_target

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STATE_FILE = "server.json"
LOG_FILE = "server.log"
MIN_JAVA = 17


@dataclass
class ServerInfo:
    pid: int
    port: int
    started_at: float
    log: Path
    version: str | None = None
    reused: bool = False
    startup_seconds: float | None = None

    @property
    def uptime(self) -> float:
        return max(0.0, time.time() - self.started_at)

    def target(self, token: str | None = None) -> Target:
        return local_target(self.port, token=token)

    @property
    def url(self) -> str:
        return self.target().display


def pyspark_home() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise ServerError("pyspark is not installed", "Install sparkscope with pip (it depends on pyspark[connect])")
    return Path(spec.origin).parent


def connect_jar(home: Path | None = None) -> Path:
    home = home or pyspark_home()
    jars = sorted((home / "jars").glob("spark-connect_*.jar"))
    if not jars:
        raise ServerError(f"No spark-connect jar in {home / 'jars'}", "Reinstall pyspark[connect] 4.x")
    return jars[-1]


def java_version(java: str | None = None) -> int:
    """The major version of the java on PATH (or JAVA_HOME); ServerError with an install hint if unusable."""
    hint = "Install Java 17 or newer, e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME"
    if java is None:
        home = os.environ.get("JAVA_HOME")
        java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise ServerError("Java is not installed (no 'java' on PATH)", hint)
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"Cannot run {java} ({exc})", hint) from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise ServerError(f"Cannot tell the version of {java}", hint)
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise ServerError(f"Java {major} is too old: Spark 4 needs Java {MIN_JAVA} or newer", hint)
    return major


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


def _is_our_server(pid: int) -> bool:
    """True when `pid` is a live SparkConnectServer JVM (guards against pid reuse)."""
    if not _pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return True  # no /proc (macOS): trust the pid file
    return SERVER_CLASS in cmdline


class LocalServer:
    """Start, stop and inspect the embedded server whose files live in `home` (the state dir)."""

    def __init__(self, home: Path | None = None):
        self.home = Path(home) if home else state_dir()
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)

    @property
    def state_path(self) -> Path:
        return self.home / STATE_FILE

    @property
    def log_path(self) -> Path:
        return self.home / LOG_FILE

    @property
    def checkpoint_root(self) -> Path:
        return self.home / "checkpoints"

    @property
    def warehouse(self) -> Path:
        """Where table sinks and saveAsTable write (Spark's default is ./spark-warehouse of whatever
        directory the server was started from)."""
        return self.home / "warehouse"

    # -- state file -----------------------------------------------------------------------------
    def _read_state(self) -> ServerInfo | None:
        try:
            data = json.loads(self.state_path.read_text())
            return ServerInfo(pid=int(data["pid"]), port=int(data["port"]), started_at=float(data["started_at"]),
                              log=Path(data.get("log", self.log_path)))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_state(self, info: ServerInfo) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": info.pid, "port": info.port, "started_at": info.started_at,
                                   "log": str(info.log)}))
        os.chmod(tmp, 0o600)
        tmp.replace(self.state_path)

    def _clear_state(self) -> None:
        self.state_path.unlink(missing_ok=True)

    def running(self) -> ServerInfo | None:
        """The server we started, if its process is still alive; a stale pid file is removed."""
        info = self._read_state()
        if info is None:
            return None
        if not _is_our_server(info.pid):
            self._clear_state()
            return None
        return info

    def status(self, token: str | None = None) -> ServerInfo | None:
        info = self.running()
        if info is not None:
            info.version = try_probe(info.target(token or os.environ.get(TOKEN_ENV)), timeout=3)
        return info

    # -- start ----------------------------------------------------------------------------------
    def command(self, port: int, master: str, conf: dict[str, str]) -> list[str]:
        home = pyspark_home()
        settings = {
            "spark.connect.grpc.binding.port": str(port),
            "spark.sql.streaming.checkpointLocation": str(self.checkpoint_root),
            "spark.sql.warehouse.dir": str(self.warehouse),
            "spark.app.name": "sparkscope-connect",
        }
        settings.update(conf)
        cmd = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", master]
        for key, value in settings.items():
            if key == "spark.connect.authenticate.token":
                continue  # never on a command line: passed through the environment instead
            cmd += ["--conf", f"{key}={value}"]
        cmd.append(str(connect_jar(home)))
        return cmd

    def start(
        self,
        port: int | None = None,
        master: str = "local[*]",
        conf: dict[str, str] | None = None,
        token: str | None = None,
        timeout: float = 180.0,
        on_wait: Callable[[float], None] | None = None,
    ) -> ServerInfo:
        """Start the server, or reuse the one already running. Waits until it answers an RPC."""
        conf = dict(conf or {})
        token = conf.pop("spark.connect.authenticate.token", None) or token
        existing = self.running()
        if existing is not None:
            if port is not None and port != existing.port:
                raise ServerError(
                    f"The local server is already running on port {existing.port}",
                    "Stop it first (sparkscope server stop) to start one on another port",
                )
            existing.version = self._wait_ready(existing, token, timeout, on_wait)
            existing.reused = True
            return existing
        port = DEFAULT_PORT if port is None else port
        if port_open("127.0.0.1", port, timeout=0.3) or not _port_free(port):
            raise ServerError(f"Port {port} is already in use by another program", "Pick another port with --port N")
        java_version()
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(pyspark_home()),
            "SPARK_CONF_DIR": str(server_config_dir()),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": env.get("SPARK_LOCAL_IP", "127.0.0.1"),
        })
        env.pop(TOKEN_ENV, None)
        if token:
            env[TOKEN_ENV] = token
        self.checkpoint_root.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the server process as its stdout
        os.chmod(self.log_path, 0o600)
        started = time.time()
        try:
            proc = subprocess.Popen(self.command(port, master, conf), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, env=env, start_new_session=True)
        finally:
            log.close()
        info = ServerInfo(pid=proc.pid, port=port, started_at=started, log=self.log_path)
        self._write_state(info)
        try:
            info.version = self._wait_ready(info, token, timeout, on_wait, proc)
        except BaseException:
            self._kill(proc.pid, grace=5)
            self._clear_state()
            raise
        info.startup_seconds = time.time() - started
        return info

    def _wait_ready(self, info: ServerInfo, token: str | None, timeout: float,
                    on_wait: Callable[[float], None] | None, proc: subprocess.Popen | None = None) -> str:
        target = info.target(token)
        deadline = time.monotonic() + timeout
        begin = time.monotonic()
        from .errors import AuthenticationFailed
        from .probe import probe

        while True:
            if proc is not None and proc.poll() is not None:
                raise ServerError(f"The Spark Connect server exited during startup (code {proc.returncode}): "
                                  f"{self._last_error()}", f"See the log: {self.log_path}")
            if port_open("127.0.0.1", info.port, timeout=0.3):
                try:
                    return probe(target, timeout=5)
                except AuthenticationFailed:
                    return "unknown (token required)"
                except Exception:
                    pass
            if time.monotonic() > deadline:
                raise ServerError(f"The Spark Connect server did not answer within {timeout:.0f}s",
                                  f"See the log: {self.log_path}")
            if on_wait:
                on_wait(time.monotonic() - begin)
            time.sleep(0.25)

    def _last_error(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()[-40:]
        except OSError:
            return "no log"
        for line in reversed(lines):
            if "Exception" in line or "Error" in line or "error" in line:
                return line.strip()[:200]
        return lines[-1].strip()[:200] if lines else "no output"

    # -- stop -----------------------------------------------------------------------------------
    def stop(self, grace: float = 20.0) -> ServerInfo | None:
        """Stop the server we started (by pid): SIGTERM, then SIGKILL after `grace` seconds."""
        info = self.running()
        if info is None:
            return None
        self._kill(info.pid, grace)
        self._clear_state()
        return info

    @staticmethod
    def _kill(pid: int, grace: float) -> None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            _reap(pid)
            if not _pid_alive(pid):
                return
            time.sleep(0.1)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        for _ in range(50):
            _reap(pid)
            if not _pid_alive(pid):
                return
            time.sleep(0.1)

    # -- logs -----------------------------------------------------------------------------------
    def log_lines(self, follow: bool = False, last: int = 200) -> Iterator[str]:
        if not self.log_path.exists():
            raise ServerError(f"No server log at {self.log_path}", "Start the server first: sparkscope server start")
        with open(self.log_path, errors="replace") as fh:
            for line in fh.readlines()[-last:]:
                yield line.rstrip("\n")
            while follow:
                line = fh.readline()
                if line:
                    yield line.rstrip("\n")
                else:
                    time.sleep(0.2)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _port_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
