"""The embedded local Spark Connect server: a JVM started from the pip-installed pyspark.

It runs as its own process (so queries outlive the REPL and a later REPL can reattach), bound to
127.0.0.1, with its pid, port and log under the state directory.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from . import log_writer
from .class_cache import ClassCache
from .cluster import Cluster, start_cluster
from ..client.catalog.records import ACTIVE, LOST, Catalog, Record
from ..client.errors import AuthenticationFailed, ServerError, ServerOutOfMemory, SparkscopeError
from ..client import delete_guard, file_lock
from ..client.logs import log as logger, swallowed
from ..client.paths import private_dir, state_dir, write_private
from ..client.connection.probe import port_open, probe, try_probe
from .ports import next_free_port, port_for_server, wait_until_free
from ..client.processes import busy_threads
from .signals import kill
from .process_tree import SERVER_MARK, Spawned, describe, end, mark, spawned_by
from ..client.connection.remote import TOKEN_ENV, local_target
from ..client.secrets import remember_secret
from .info import ServerInfo, holds_port, is_our_server
from .log_file import ServerLog, startup_stage
from .command import TOKEN_CONF, spark_submit, submit_environment, ui_settings
from .sizing import check_memory, default_driver_memory
from .spark_install import java_path, java_version, pyspark_home
from .access.users import INTERCEPTOR, INTERCEPTOR_CONF, USERS_CONF, USERS_FILE, WORKER_TOKEN_ENV, Users
from .maven.packages import package_conf

STATE_FILE = "server.json"
LAST_STATE_FILE = "last-server.json"  # the state of the server that ran last, once it stopped or died
START_LOCK_FILE = "start.lock"
TOKEN_FILE = "token"
LOG_FILE = "server.log"
PORT_ATTEMPTS = 3  # ports tried when others take the free one picked while the server starts
RECORDING_GRACE = 30.0  # seconds more for a stopping server to write its class archive (130 MB)
UI_READERS = "every user of this machine can read it (every SQL text, plan and setting you run)"


# Held from a server's spawn until its state file names it. The REPL starts the server on a daemon thread, so a
# :quit during a cold start could end the process between the two: the server then ran with nothing naming
# it, which no `sparkscope server stop` could find. At exit, that step finishes.
_SPAWNING = threading.Lock()
SPAWN_FINISH_SECONDS = 10.0


def _finish_spawning() -> None:
    if _SPAWNING.acquire(timeout=SPAWN_FINISH_SECONDS):
        _SPAWNING.release()


atexit.register(_finish_spawning)


def _held(record: Record) -> str:
    """What a catalogued query kept in the server's memory, in a few words."""
    if record.sink == "bounded":
        from ..client.queries.planning import parse_keep

        return f"bounded sink, {parse_keep(record.keep)}"
    if record.sink == "memory":
        return "memory sink: every row" if record.mode != "complete" else "memory sink: its result"
    return f"{record.sink} sink"


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
    def _read_state(self, last: bool = False) -> ServerInfo | None:
        """The running server's state (`last`: the state of the one that ran last, once it stopped or died)."""
        try:
            data = json.loads((self.state_path.with_name(LAST_STATE_FILE) if last else self.state_path).read_text())
            return ServerInfo(pid=int(data["pid"]), port=int(data["port"]), started_at=float(data["started_at"]),
                              log=Path(data.get("log", self.log_path)), ready=bool(data.get("ready")),
                              token=self.token() if data.get("auth") and not last else None,
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

    def _clear_state(self, of_pid: int | None = None) -> None:
        """Remove the state and token files; with `of_pid`, only while the state names that process (another
        process's live server keeps its own)."""
        if of_pid is not None:
            recorded = self._read_state()
            if recorded is not None and recorded.pid != of_pid:
                return
        if self.state_path.exists():  # kept as the last server's: what ran when it died is read from it
            delete_guard.replace(self.state_path, self.state_path.with_name(LAST_STATE_FILE))
        delete_guard.remove_file(self.token_path)

    def running(self) -> ServerInfo | None:
        """The server we started, if its process is still alive; a stale pid file is removed."""
        info = self._read_state()
        if info is None:
            return None
        if not is_our_server(info):
            if info.cluster is not None:  # the server died: its cluster goes with it
                info.cluster.stop(grace=5)
            self._clear_state()
            return None
        return info

    def alive(self) -> ServerInfo | None:
        """The server we started, if its process is alive: running() without its cleaning up after a dead one
        (for explaining an error, which must never stop or delete anything)."""
        info = self._read_state()
        return info if info is not None and is_our_server(info) else None

    def out_of_memory_exit(self) -> ServerOutOfMemory | None:
        """When the server is gone and its log (since its last start) ends in the JVM's exit on an
        OutOfMemoryError (-XX:+ExitOnOutOfMemoryError): what ran out, when, and what ran on it, as the error to
        show."""
        if self.alive() is not None:
            return None
        return self.log.out_of_memory_exit(ran=", ".join(f"{r.name} ({_held(r)})" for r in self.ran_when_it_died()))

    def ran_when_it_died(self) -> list[Record]:
        """The catalogued queries that were running on this server when it last stopped or died (its port's records
        still running, or marked lost since)."""
        info = self._read_state() or self._read_state(last=True)
        if info is None:
            return []
        url = local_target(info.port).with_session(None).display
        try:
            records = Catalog.in_home(self.home).records(url)
        except SparkscopeError:
            return []
        return [r for r in records if r.state in (ACTIVE, LOST) and r.started_at >= info.started_at]

    def busy_tasks(self, window: float = 1.0, info: ServerInfo | None = None) -> list[float] | None:
        """The cores each computing Spark task of this server uses now (sampled over `window` seconds); None
        when it is not running or runs its tasks on a cluster's executors (the task reaper ends theirs).
        `info`: its state, when the caller has just read it."""
        info = info or self.alive()
        if info is None or info.cluster is not None:
            return None
        return busy_threads(info.pid, window=window)

    def status(self) -> ServerInfo | None:
        info = self.running()
        if info is not None:
            info.version = try_probe(info.target(), timeout=3)
        return info

    # -- start ----------------------------------------------------------------------------------
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
        The JVM gets only its hash, in the users file (0600), where each user added later has one too (the jar's
        interceptor checks every request's token and user); clients get the token through a 0600 file in the state
        dir; never through a command line.
        """
        if not (0 < timeout < float("inf")):
            raise ServerError(f"The start timeout must be a positive number of seconds, not {timeout}",
                              "Pass e.g. --timeout 180")
        conf = dict(conf or {})
        token = conf.pop(TOKEN_CONF, None) or token or os.environ.get(TOKEN_ENV)
        with self._starting(timeout, on_wait):
            existing = self.running()
            if existing is not None:
                return self._reuse(existing, port, workers, timeout, on_wait)
            return self._start_new(port, master, conf, token, timeout, on_wait, require_token, workers,
                                   worker_cores, worker_memory, driver_memory, ui)

    @contextlib.contextmanager
    def _starting(self, timeout: float, on_wait: Callable[[float, str], None] | None) -> Iterator[None]:
        """Held from the look for a running server until the one started answers: two processes starting from
        a cold state dir at once start one server, and the second uses it."""
        private_dir(self.home)

        def waiting(seconds: float) -> None:
            if on_wait:
                on_wait(seconds, "another sparkscope is starting it")

        try:
            with file_lock.held(self.home / START_LOCK_FILE, timeout, waiting):
                yield
        except file_lock.LockWaitExpired:
            raise ServerError(f"Another sparkscope has been starting the local server of {self.home} for "
                              f"{timeout:.0f}s", "Try again once it has started: sparkscope server status") from None

    def _start_new(self, port: int | None, master: str, conf: dict[str, str], token: str | None, timeout: float,
                   on_wait: Callable[[float, str], None] | None, require_token: bool, workers: int,
                   worker_cores: int | None, worker_memory: str, driver_memory: str | None, ui: bool) -> ServerInfo:
        left = self.end_leftovers()
        if left:
            logger.warning("Ended what the last server of %s left running when it ended without a stop: %s",
                           self.home, describe(left))
        if not require_token:
            token = None
        elif not token:
            token = secrets.token_urlsafe(32)  # like Jupyter: a random token by default
        chosen = port_for_server(port)
        ui_port = ui_settings(ui, conf)
        java_version()
        driver_memory = check_memory(driver_memory) if driver_memory else default_driver_memory()
        env = submit_environment(self.home)
        cluster = None
        if workers:
            cluster = start_cluster(self.home, workers, cores=worker_cores, memory=worker_memory, env=env,
                                    timeout=timeout, on_wait=on_wait)
            master = cluster.master_url
        if token:
            conf = self._identities(conf, env)
        conf = package_conf(conf)  # Spark's packages (--kafka) into a cache of sparkscope's own, never ~/.m2's
        self._prepare_home(token)
        info = ServerInfo(pid=0, port=chosen, started_at=0.0, log=self.log_path, token=token, cluster=cluster,
                          driver_memory=driver_memory, ui_port=ui_port)
        return self._launch(info, master, conf, env, timeout, on_wait, port_fixed=port is not None)

    def _identities(self, conf: dict[str, str], env: dict[str, str]) -> dict[str, str]:
        """A server with a token checks every request's token and user (server/users.py, the jar's interceptor)
        instead of Spark's own single-token check: its own token (written to the users file by _prepare_home) is
        its owner's, and each user added later has one of their own. Spark's Python workers get a token of their
        own to call back with, through the server's environment (the master and workers never see it)."""
        worker_token = secrets.token_urlsafe(32)
        remember_secret(worker_token)
        env[WORKER_TOKEN_ENV] = worker_token
        interceptors = [INTERCEPTOR, *(c for c in conf.get(INTERCEPTOR_CONF, "").split(",") if c.strip())]
        return {**conf, USERS_CONF: str(self.users.path), INTERCEPTOR_CONF: ",".join(interceptors)}

    @property
    def users(self) -> Users:
        """The users of this state dir's server: a token each (`sparkscope server users`)."""
        return Users(self.home / USERS_FILE)

    def _reuse(self, existing: ServerInfo, port: int | None, workers: int, timeout: float,
               on_wait: Callable[[float, str], None] | None) -> ServerInfo:
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

    def _prepare_home(self, token: str | None) -> None:
        """The state dir's folders (private: checkpoints hold the user's data and state), an empty scratch
        folder, and the token's 0600 file."""
        private_dir(self.checkpoint_root)
        private_dir(self.warehouse)
        if self.scratch.exists():  # what a killed server left
            with swallowed(f"emptying {self.scratch}"):
                delete_guard.remove_tree(self.scratch)
        private_dir(self.scratch)
        delete_guard.remove_file(self.token_path)
        if token:
            remember_secret(token)
            write_private(self.token_path, token)
            self.users.set_admin(token)

    def _launch(self, info: ServerInfo, master: str, conf: dict[str, str], env: dict[str, str], timeout: float,
                on_wait: Callable[[float, str], None] | None, port_fixed: bool) -> ServerInfo:
        """Spawn the JVM and wait until it answers; once more without the class archive when the JVM could
        not map it, and on the next free port when another program took the one picked (unless it was asked
        for: --port)."""
        class_cache = ClassCache(self.home, java_path() or "java", pyspark_home())
        env["SPARK_CONF_DIR"] = str(class_cache.conf_dir())
        archive_retried, ports_tried = False, 1
        while True:
            class_cache_option, recording = class_cache.java_options()
            info.started_at = time.time()
            with _SPAWNING:
                try:
                    cmd = spark_submit(port=info.port, master=master, conf=conf, driver_memory=info.driver_memory,
                                       class_cache_option=class_cache_option, checkpoints=self.checkpoint_root,
                                       warehouse=self.warehouse, scratch=self.scratch, crash_reports=self.home)
                    proc, log_offset = self._spawn(cmd, env, [info.token or "", env.get(WORKER_TOKEN_ENV, "")])
                except BaseException:
                    if info.cluster is not None:
                        info.cluster.stop(grace=5)
                    raise
                info.pid, info.class_recording = proc.pid, str(recording) if recording else None
                self._write_state(info)
            try:
                info.version = self._wait_ready(info, info.token, timeout, on_wait, proc)
            except BaseException as exc:
                kill(proc.pid, grace=5)
                if recording is not None:
                    class_cache.keep(recording, stopped_cleanly=False)
                elif not archive_retried and proc.poll() is not None and class_cache.discard_if_unusable(
                        "\n".join(self.log.new_lines(log_offset))):
                    archive_retried = True
                    continue  # the JVM could not map the class archive: it is gone, start without it
                if getattr(exc, "code", None) == "port_taken" and not port_fixed and ports_tried < PORT_ATTEMPTS:
                    taken, info.port = info.port, next_free_port(info.port + 1)
                    ports_tried += 1
                    logger.warning("Port %d was taken by another program while the server started; starting it "
                                   "on port %d instead", taken, info.port)
                    continue
                if info.cluster is not None:
                    info.cluster.stop(grace=5)
                self._clear_state(of_pid=proc.pid)
                raise
            break
        info.ready = True
        self._write_state(info)
        info.startup_seconds = time.time() - info.started_at
        if recording is None:
            class_cache.discard_if_unusable("\n".join(self.log.new_lines(log_offset)), info.pid)
            class_cache.record_later(after=info.pid)
        return info

    def _spawn(self, cmd: list[str], env: dict[str, str], tokens: list[str]) -> tuple[subprocess.Popen, int]:
        """Start the server with its output going through log_writer, which hides its tokens (pyspark's
        foreachBatch worker prints the one it calls back with); also the log's size before this start, after its
        marker."""
        offset = self.log.start_marker()
        # its own output goes nowhere: inheriting ours would hold open the pipes of whoever ran us
        # (`subprocess.run(["sparkscope", "server", "start"])` would wait for as long as the server runs)
        writer = subprocess.Popen([sys.executable, "-I", log_writer.__file__, str(self.log_path)],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={log_writer.TOKEN_ENV: "\n".join(filter(None, tokens)),
                                       SERVER_MARK: mark(self.home)},
                                  start_new_session=True, umask=0o077)
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
        log_offset = self.log.size() if proc is not None else 0
        while True:
            if proc is not None and proc.poll() is not None:
                self._log_complete()
                raise ServerError(f"The Spark Connect server exited during startup (code {proc.returncode}): "
                                  f"{self.log.last_error(log_offset)}", f"See the log: {self.log_path}")
            fatal = self.log.fatal_error(log_offset) if proc is not None else None
            if fatal and "Failed to bind" in fatal:
                raise ServerError(f"Port {info.port} was taken by another program while the server started",
                                  "Start it again (sparkscope server start picks a free port), or pick one: --port N",
                                  code="port_taken", data={"port": str(info.port)})
            if fatal:
                raise ServerError(f"The Spark Connect server failed to start: {fatal}",
                                  f"Fix the setting and start again; the log is {self.log_path}")
            if port_open("127.0.0.1", info.port, timeout=0.3) and holds_port(info):
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
                on_wait(time.monotonic() - begin, startup_stage(self.log.new_lines(log_offset)))
            time.sleep(0.1)

    # -- stop -----------------------------------------------------------------------------------
    def processes(self, info: ServerInfo | None = None) -> list[Spawned]:
        """The processes this state dir's server started that run now, besides its JVM and its cluster's members:
        Python workers, the log writer, executors (process_tree)."""
        info = info or self._read_state()
        members = [member.pid for member in info.cluster.members] if info and info.cluster else []
        return spawned_by(self.home, besides=(*([info.pid] if info else []), *members))

    def end_leftovers(self, grace: float = 5.0) -> list[Spawned]:
        """With no server of this state dir running: end what an earlier one left (a server killed -9 leaves its
        Python workers running); those it ended."""
        if self.running() is not None:
            return []
        left = spawned_by(self.home)
        if left:
            end(left, grace)
        return left

    def stop(self, grace: float = 20.0) -> ServerInfo | None:
        """Stop the server we started (by pid): SIGTERM, then SIGKILL after `grace` seconds; then its
        cluster's workers and master, if it has one; then every process it started that still runs (its Python
        workers: Spark leaves them running), counted in the info's `ended`."""
        info = self.running()
        if info is None:
            return None
        # a server recording its class archive writes it as it exits: give it the time that takes
        stopped_cleanly = kill(info.pid, grace + (RECORDING_GRACE if info.class_recording else 0))
        wait_until_free(info.port)  # so that a start right after finds the port free
        if info.class_recording:  # the JVM wrote its class archive as it exited
            ClassCache(self.home, java_path() or "java", pyspark_home()).keep(Path(info.class_recording), stopped_cleanly)
        if info.cluster is not None:
            info.cluster.stop(grace)
        # its Python workers, and the class archive's recorder its start began (which stops its own JVM on SIGTERM)
        left = spawned_by(self.home)
        end(left, min(grace, 10.0))
        info.ended = left
        self._clear_state()
        return info

    # -- logs -----------------------------------------------------------------------------------
    @property
    def log(self) -> ServerLog:
        return ServerLog(self.log_path)

    def log_lines(self, follow: bool = False, last: int = 200) -> Iterator[str]:
        """The log's last lines, tokens hidden."""
        return self.log.lines(self.token(), follow=follow, last=last)

