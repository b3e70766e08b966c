"""The embedded local Spark Connect server: a JVM started from the pip-installed pyspark.

It runs as its own process (so queries outlive the REPL and a later REPL can reattach), bound to
127.0.0.1, with its pid, port and log under the state directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import log_writer
from .class_cache import ClassCache, quote_option
from .cluster import Cluster, start_cluster
from .errors import ServerError, ServerOutOfMemory
from .logs import log as logger
from .paths import private_dir, server_config_dir, state_dir, write_private
from .probe import port_open, try_probe
from .processes import is_ours, kill, listens_on, next_free_port, usable
from .remote import DEFAULT_PORT, TOKEN_ENV, Target, local_target
from .secrets import redact, remember_secret

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
TOKEN_CONF = "spark.connect.authenticate.token"
STATE_FILE = "server.json"
TOKEN_FILE = "token"
LOG_FILE = "server.log"
START_MARKER = "== sparkscope started the server at"  # written to the log before each start
_OOM_EXIT = re.compile(r"Terminating due to java\.lang\.OutOfMemoryError: ([^\n]+)")
MIN_JAVA = 17
RECORDING_GRACE = 30.0  # seconds more for a stopping server to write its class archive (130 MB)
# Lines after which the server will never answer: say why at once instead of waiting out the timeout.
_FATAL = re.compile(r"Exception in thread \"main\"|Error initializing SparkContext|ERROR SparkSubmit|"
                    r"Failed to bind|Could not parse Master URL|NumberFormatException|INVALID_CONF_VALUE|"
                    r"Error while instantiating 'org\.apache\.spark\.sql\.internal\.SessionStateBuilder'")


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
        """The server's resident memory (Linux /proc), or None when unknown."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
        return None


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


UI_PORT = 4040  # Spark's own first choice for the UI
UI_READERS = "every user of this machine can read it (every SQL text, plan and setting you run)"
SLOTS_PER_CORE = 4


def local_master(master: str, cores: int | None = None) -> tuple[str, dict[str, str]]:
    """The master the embedded server runs on, and the settings that go with it. `local[*]` (one task slot
    per core) becomes four slots per core, with the default parallelism kept at one task per core: a long
    interactive job (`range(10**11)`) then takes one slot per core and the streams' batches have the rest.
    Spark never preempts a task, and a cancelled one that does not check for its kill (a top-K sort)
    runs to the end of its partition: with local[*] every stream waited for it (measured: no batch for
    60 s after a cancel). The cores stay shared by the OS, as they always were."""
    if master != "local[*]":
        return master, {}
    cores = cores or os.cpu_count() or 2
    return f"local[{cores * SLOTS_PER_CORE}]", {"spark.default.parallelism": str(cores)}


DRIVER_MEMORY_SHARE = 0.25  # of this machine's RAM, for the embedded server's driver heap
DRIVER_MEMORY_RANGE = (1024, 8192)  # MiB: never below Spark's own default, never a heap that pauses for long


def default_driver_memory(total_bytes: int | None = None) -> str:
    """The embedded server's driver heap: a quarter of the RAM, from 1 GiB (Spark's default) to 8 GiB.

    In local mode the driver JVM is the whole of Spark: executors, state stores and every memory sink
    live in its heap. Spark's 1 GiB runs out at a million-row memory sink. A quarter leaves the rest
    to the user's editor, browser and Python; above 8 GiB, collections pause long enough to delay
    batches, and whoever needs more says so with --driver-memory."""
    if total_bytes is None:
        try:
            total_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            total_bytes = 4 * 2**30
    low, high = DRIVER_MEMORY_RANGE
    mib = int(min(high, max(low, total_bytes / 2**20 * DRIVER_MEMORY_SHARE)))
    return f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"


def check_memory(text: str) -> str:
    """A JVM memory size as spark-submit takes it (512m, 4g), or a ServerError."""
    if not re.fullmatch(r"[1-9]\d*[kKmMgGtT]", text.strip()):
        raise ServerError(f"'{text}' is not a memory size", "Write a number and a unit, e.g. 4g or 512m")
    return text.strip().lower()


def java_path() -> str | None:
    """The java spark-submit runs: JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else shutil.which("java")


def java_version(java: str | None = None) -> int:
    """The major version of the java on PATH (or JAVA_HOME); ServerError with an install hint if unusable."""
    hint = "Install Java 17 or newer, e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME"
    java = java or java_path()
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


def _is_our_server(info: ServerInfo) -> bool:
    """True only when the pid file's process is the server this state dir started: alive, ours (same
    user), the Connect server class with our port on its command line, started when we recorded it,
    and, once it has answered, listening on that port. A reused pid or a decoy fails one of these."""
    if not is_ours(info.pid, info.started_at, [SERVER_CLASS, f"spark.connect.grpc.binding.port={info.port}"]):
        return False
    return not info.ready or _holds_port(info)


def _holds_port(info: ServerInfo) -> bool:
    """Whether the server's own process (the pid we started) listens on its port. The token goes only
    to that process: another program that took the port while our JVM started must not get it."""
    return not Path("/proc/self").exists() or listens_on(info.pid, info.port)


def startup_stage(log_lines: list[str]) -> str:
    """Where a starting server is, from what it logged since it started (server-config's log4j2 keeps
    SparkConnectServer's two lines)."""
    text = "\n".join(log_lines[-200:])
    if "Spark Connect server started" in text:
        return "opening a session"
    if "Starting Spark session" in text:
        return "starting the Spark session"
    return "starting Java"


class LocalServer:
    """Start, stop and inspect the embedded server whose files live in `home` (the state dir)."""

    def __init__(self, home: Path | None = None):
        self.home = private_dir(Path(home)) if home else state_dir()

    @property
    def state_path(self) -> Path:
        return self.home / STATE_FILE

    @property
    def log_path(self) -> Path:
        return self.home / LOG_FILE

    @property
    def token_path(self) -> Path:
        return self.home / TOKEN_FILE

    def token(self) -> str | None:
        """The running server's token (mode 0600 file in the state dir), or None when auth is off."""
        try:
            token = self.token_path.read_text().strip() or None
        except OSError:
            return None
        if token:
            remember_secret(token)
        return token

    @property
    def checkpoint_root(self) -> Path:
        return self.home / "checkpoints"

    @property
    def scratch(self) -> Path:
        """The server's temporary files (java.io.tmpdir, spark.local.dir: shuffle and spill files,
        uploaded artifacts, RocksDB's native library). A server that was killed cannot remove its own,
        so each start empties it: only one server runs per state dir."""
        return self.home / "tmp"

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
                              log=Path(data.get("log", self.log_path)), ready=bool(data.get("ready")),
                              token=self.token() if data.get("auth") else None,
                              cluster=Cluster.from_json(data["cluster"]) if data.get("cluster") else None,
                              driver_memory=data.get("driver_memory"), class_recording=data.get("class_recording"),
                              ui_port=data.get("ui_port"))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_state(self, info: ServerInfo) -> None:
        write_private(self.state_path, json.dumps({
            "pid": info.pid, "port": info.port, "started_at": info.started_at, "log": str(info.log),
            "auth": info.auth, "ready": info.ready,
            "cluster": info.cluster.to_json() if info.cluster else None, "driver_memory": info.driver_memory,
            "class_recording": info.class_recording, "ui_port": info.ui_port}))

    def _clear_state(self) -> None:
        self.state_path.unlink(missing_ok=True)
        self.token_path.unlink(missing_ok=True)

    def running(self) -> ServerInfo | None:
        """The server we started, if its process is still alive; a stale pid file is removed."""
        info = self._read_state()
        if info is None:
            return None
        if not _is_our_server(info):
            if info.cluster is not None:  # the server died: its cluster goes with it
                info.cluster.stop(grace=5)
            self._clear_state()
            return None
        return info

    def out_of_memory_exit(self) -> ServerOutOfMemory | None:
        """When the server is gone and its log (since its last start) ends in the JVM's exit on an
        OutOfMemoryError (-XX:+ExitOnOutOfMemoryError): what ran out, as the error to show."""
        if self.running() is not None or not self.log_path.exists():
            return None
        with open(self.log_path, "rb") as fh:
            fh.seek(max(0, self.log_path.stat().st_size - 256 * 1024))
            text = fh.read().decode(errors="replace")
        match = _OOM_EXIT.search(text.rsplit(START_MARKER, 1)[-1])
        if match is None:
            return None
        return ServerOutOfMemory(f"The Spark server ran out of memory ({match.group(1).strip()}) and exited",
                                 "Start it again with its queries: sparkscope server start --restore (add "
                                 "--driver-memory 8g for more memory; queries of the memory sink keep every row)",
                                 "OutOfMemoryError", code="server_exited_out_of_memory")

    def status(self) -> ServerInfo | None:
        info = self.running()
        if info is not None:
            info.version = try_probe(info.target(), timeout=3)
        return info

    # -- start ----------------------------------------------------------------------------------
    def command(self, port: int, master: str, conf: dict[str, str], driver_memory: str | None = None,
                class_cache_option: str = "") -> list[str]:
        home = pyspark_home()
        config = server_config_dir()
        master, slot_settings = local_master(master)
        settings = {
            **slot_settings,
            "spark.scheduler.allocation.file": str(config / "fairscheduler.xml"),
            "spark.connect.grpc.binding.port": str(port),
            "spark.sql.streaming.checkpointLocation": str(self.checkpoint_root),
            "spark.sql.warehouse.dir": str(self.warehouse),
            "spark.local.dir": str(self.scratch),
            "spark.app.name": "sparkscope-connect",
        }
        settings.update(conf)
        # After an OutOfMemoryError a JVM goes on with threads that died mid-update (listener bus, state
        # maintenance, gRPC handlers) and answers wrongly. Exiting makes it visible: clients say the
        # server went away, and `server start --restore` restarts the catalogued queries from their
        # checkpoints, with nothing lost or repeated.
        options = settings.get("spark.driver.extraJavaOptions", "")
        extra = []
        if "OutOfMemoryError" not in options:
            extra.append("-XX:+ExitOnOutOfMemoryError")
        if "java.io.tmpdir" not in options:
            extra.append(quote_option(f"-Djava.io.tmpdir={self.scratch}"))
        if "ErrorFile" not in options:  # a JVM crash report goes to the state dir, not the user's cwd
            extra.append(quote_option(f"-XX:ErrorFile={self.home / 'hs_err_pid%p.log'}"))
        # SPARK_CONF_DIR is empty (see class_cache): the configuration comes from files named here
        if "log4j2.configurationFile" not in options:
            extra.append(quote_option(f"-Dlog4j2.configurationFile={config / 'log4j2.properties'}"))
        if class_cache_option and not re.search(r"Xshare|SharedArchiveFile|ArchiveClassesAtExit", options):
            extra.append(class_cache_option)
        settings["spark.driver.extraJavaOptions"] = " ".join([options, *extra]).strip()
        cmd = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", master,
               "--properties-file", str(config / "spark-defaults.conf")]
        if driver_memory:
            cmd += ["--driver-memory", driver_memory]
        for key, value in settings.items():
            if key == TOKEN_CONF:
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
        on_wait: Callable[[float, str], None] | None = None,
        require_token: bool = True,
        workers: int = 0,
        worker_cores: int | None = None,
        worker_memory: str = "2g",
        driver_memory: str | None = None,
        ui: bool = False,
    ) -> ServerInfo:
        """Start the server, or reuse the one already running. Waits until it answers an RPC.

        With `workers`, it runs on a standalone cluster of this machine (a master and that many
        workers, Spark's own classes from the wheel) instead of local mode; `server stop` stops all.

        The server always requires a token unless require_token=False: the one given (argument,
        --conf spark.connect.authenticate.token, SPARK_CONNECT_AUTHENTICATE_TOKEN) or a random one.
        It reaches the JVM through its environment and clients through a 0600 file in the state dir,
        never through a command line.
        """
        if not (0 < timeout < float("inf")):
            raise ServerError(f"The start timeout must be a positive number of seconds, not {timeout}",
                              "Pass e.g. --timeout 180")
        conf = dict(conf or {})
        token = conf.pop(TOKEN_CONF, None) or token or os.environ.get(TOKEN_ENV)
        existing = self.running()
        if existing is not None:
            if port is not None and port != existing.port:
                raise ServerError(
                    f"The local server is already running on port {existing.port}",
                    "Stop it first (sparkscope server stop) to start one on another port",
                )
            if workers and existing.cluster is None:
                raise ServerError("The local server is already running in local mode",
                                  "Stop it first (sparkscope server stop) to start it on a cluster")
            existing.version = self._wait_ready(existing, None, timeout, on_wait)
            existing.reused = True
            return existing
        if not require_token:
            token = None
        elif not token:
            token = secrets.token_urlsafe(32)  # like Jupyter: a random token by default
        if port is None:
            port = next_free_port(DEFAULT_PORT)
            if port != DEFAULT_PORT:
                logger.warning("Port %d is taken by another program or server; the embedded server uses "
                               "port %d (sparkscope --port N picks one)", DEFAULT_PORT, port)
        if not 0 < port < 65536:
            raise ServerError(f"{port} is not a port", "Use a number from 1 to 65535")
        if not usable(port):
            raise ServerError(f"Port {port} is already in use by another program", "Pick another port with --port N")
        ui_port = None
        # off by default (server-config): every local user could read it
        if ui or conf.get("spark.ui.enabled", "").lower() == "true":
            ui_port = int(conf.get("spark.ui.port") or next_free_port(UI_PORT))
            conf.update({"spark.ui.enabled": "true", "spark.ui.port": str(ui_port)})
        java_version()
        class_cache = ClassCache(self.home, java_path() or "java", pyspark_home())
        driver_memory = check_memory(driver_memory) if driver_memory else default_driver_memory()
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(pyspark_home()),
            "SPARK_CONF_DIR": str(server_config_dir()),
            # the driver, and every executor of a cluster, run Python UDFs with this interpreter
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": env.get("SPARK_LOCAL_IP", "127.0.0.1"),
        })
        env.pop(TOKEN_ENV, None)
        cluster = None
        if workers:
            cluster = start_cluster(self.home, workers, cores=worker_cores, memory=worker_memory, env=env,
                                    timeout=timeout, on_wait=on_wait)
            master = cluster.master_url
        if token:
            env[TOKEN_ENV] = token  # the server's alone: the master and workers never see it
        env["SPARK_CONF_DIR"] = str(class_cache.conf_dir())
        private_dir(self.checkpoint_root)  # checkpoints hold the user's data and state
        private_dir(self.warehouse)
        shutil.rmtree(self.scratch, ignore_errors=True)  # what a killed server left
        private_dir(self.scratch)
        self.token_path.unlink(missing_ok=True)
        if token:
            remember_secret(token)
            write_private(self.token_path, token)
        for attempt in (1, 2):
            class_cache_option, recording = class_cache.java_options()
            started = time.time()
            try:
                proc, log_offset = self._spawn(self.command(port, master, conf, driver_memory, class_cache_option),
                                               env, token)
            except BaseException:
                if cluster is not None:
                    cluster.stop(grace=5)
                raise
            info = ServerInfo(pid=proc.pid, port=port, started_at=started, log=self.log_path, token=token,
                              cluster=cluster, driver_memory=driver_memory, ui_port=ui_port,
                              class_recording=str(recording) if recording else None)
            self._write_state(info)
            try:
                info.version = self._wait_ready(info, token, timeout, on_wait, proc)
            except BaseException:
                kill(proc.pid, grace=5)
                if recording is not None:
                    class_cache.keep(recording, stopped_cleanly=False)
                elif attempt == 1 and proc.poll() is not None and class_cache.discard_if_unusable(
                        "\n".join(self._new_log_lines(log_offset))):
                    continue  # the JVM could not map the class archive: it is gone, start without it
                if cluster is not None:
                    cluster.stop(grace=5)
                self._clear_state()
                raise
            break
        info.ready = True
        self._write_state(info)
        info.startup_seconds = time.time() - started
        if recording is None:
            class_cache.discard_if_unusable("\n".join(self._new_log_lines(log_offset)), info.pid)
        return info

    def _spawn(self, cmd: list[str], env: dict[str, str], token: str | None) -> tuple[subprocess.Popen, int]:
        """Start the server with its output going through log_writer, which hides its token (pyspark's
        foreachBatch worker prints it); also the log's size before this start, after its marker."""
        with open(self.log_path, "ab") as log:
            os.chmod(self.log_path, 0o600)
            log.write(f"{START_MARKER} {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
            offset = log.tell()
        # its own output goes nowhere: inheriting ours would hold open the pipes of whoever ran us
        # (`subprocess.run(["sparkscope", "server", "start"])` would wait for as long as the server runs)
        writer = subprocess.Popen([sys.executable, "-I", log_writer.__file__, str(self.log_path)],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={log_writer.TOKEN_ENV: token or ""}, start_new_session=True, umask=0o077)
        assert writer.stdin is not None
        self._log_writer = writer
        try:  # both in sessions of their own: they outlive this process and its terminal's Ctrl-C
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=writer.stdin, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True, umask=0o077), offset
        except BaseException:
            writer.kill()
            raise
        finally:
            writer.stdin.close()

    def _log_complete(self) -> None:
        """After the server exited: wait (briefly) until log_writer has written all it printed."""
        writer = getattr(self, "_log_writer", None)
        if writer is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                writer.wait(timeout=5)

    def _wait_ready(self, info: ServerInfo, token: str | None, timeout: float,
                    on_wait: Callable[[float, str], None] | None, proc: subprocess.Popen | None = None) -> str:
        target = info.target(token)  # without one given, the server's own
        deadline = time.monotonic() + timeout
        begin = time.monotonic()
        log_offset = self.log_path.stat().st_size if proc is not None and self.log_path.exists() else 0
        from .errors import AuthenticationFailed
        from .probe import probe

        while True:
            if proc is not None and proc.poll() is not None:
                self._log_complete()
                raise ServerError(f"The Spark Connect server exited during startup (code {proc.returncode}): "
                                  f"{self._last_error(log_offset)}", f"See the log: {self.log_path}")
            fatal = self._fatal_error(log_offset) if proc is not None else None
            if fatal and "Failed to bind" in fatal:
                raise ServerError(f"Port {info.port} was taken by another program while the server started",
                                  "Start it again (sparkscope server start picks a free port), or pick one: --port N")
            if fatal:
                raise ServerError(f"The Spark Connect server failed to start: {fatal}",
                                  f"Fix the setting and start again; the log is {self.log_path}")
            if port_open("127.0.0.1", info.port, timeout=0.3) and _holds_port(info):
                try:
                    return probe(target, timeout=5)
                except AuthenticationFailed:
                    return "unknown (token required)"
                except Exception:
                    logger.debug("the server did not answer yet", exc_info=True)
            if time.monotonic() > deadline:
                raise ServerError(f"The Spark Connect server did not answer within {timeout:.0f}s",
                                  f"See the log: {self.log_path}")
            if on_wait:
                on_wait(time.monotonic() - begin, startup_stage(self._new_log_lines(log_offset)))
            time.sleep(0.1)

    def _new_log_lines(self, offset: int) -> list[str]:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(offset)
                return fh.read().decode(errors="replace").splitlines()
        except OSError:
            return []

    def _fatal_error(self, offset: int) -> str | None:
        """The cause, in one line, once the new part of the log shows a fatal start-up error."""
        lines = self._new_log_lines(offset)
        for index, line in enumerate(lines):
            if _FATAL.search(line):
                return _cause(lines[index:index + 40])
        return None

    def _last_error(self, offset: int = 0) -> str:
        fatal = self._fatal_error(offset)
        if fatal:
            return fatal
        lines = self._new_log_lines(offset)[-60:]
        if not lines:
            return "no output"
        for line in reversed(lines):
            if "Exception" in line or "Error" in line or "error" in line:
                return line.strip()[:200]
        return lines[-1].strip()[:200]

    # -- stop -----------------------------------------------------------------------------------
    def stop(self, grace: float = 20.0) -> ServerInfo | None:
        """Stop the server we started (by pid): SIGTERM, then SIGKILL after `grace` seconds; then its
        cluster's workers and master, if it has one."""
        info = self.running()
        if info is None:
            return None
        # a server recording its class archive writes it as it exits: give it the time that takes
        stopped_cleanly = kill(info.pid, grace + (RECORDING_GRACE if info.class_recording else 0))
        if info.class_recording:  # the JVM wrote its class archive as it exited
            ClassCache(self.home, java_path() or "java", pyspark_home()).keep(Path(info.class_recording), stopped_cleanly)
        if info.cluster is not None:
            info.cluster.stop(grace)
        self._clear_state()
        return info

    # -- logs -----------------------------------------------------------------------------------
    def log_lines(self, follow: bool = False, last: int = 200) -> Iterator[str]:
        """The log's last lines, tokens hidden: pyspark's foreachBatch worker (the default sink's too) logs
        its connection URL, token included, when it starts."""
        if not self.log_path.exists():
            raise ServerError(f"No server log at {self.log_path}", "Start the server first: sparkscope server start")
        token = self.token()
        if token:
            remember_secret(token)
        with open(self.log_path, errors="replace") as fh:
            for line in fh.readlines()[-last:]:
                yield redact(line.rstrip("\n"))
            while follow:
                line = fh.readline()
                if line:
                    yield redact(line.rstrip("\n"))
                else:
                    time.sleep(0.2)


def _cause(lines: list[str]) -> str:
    """The most telling line of a JVM failure: the deepest 'Caused by', else the exception line itself,
    without the logger's prefix and never a stack frame."""
    causes = [line for line in lines if line.strip().startswith("Caused by:")]
    candidates = causes[-1:] or [line for line in lines if ("Exception" in line or "Error" in line)
                                 and not line.strip().startswith("at ")]
    text = (candidates[0] if candidates else lines[0]).strip()
    text = re.sub(r"^Caused by:\s*", "", text)
    text = re.sub(r"^\S+ \S+ (ERROR|WARN) \S+: ", "", text)  # log4j's date, time, level, logger
    text = re.sub(r"^Exception in thread \"main\"\s*", "", text)
    text = re.sub(r"^[\w.$]+(Exception|Error):\s*", "", text)  # the Java class name
    text = re.sub(r"^\[[A-Z_.]+\]\s*|\s*SQLSTATE: \w+", "", text)  # Spark's error class and SQLSTATE
    return text[:240]
