"""The server's processes: what a start spawns (its class archive's recorder, the Spark JVM), and that a stop or a crash
leaves none of them behind and names the server in its state. Each test starts servers of its own (a file apart
from test_server.py, so that the suite's two workers share these slow tests)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import signal
import subprocess
import sys
from pathlib import Path

from sparkscope.server.ports import free_port
from sparkscope.server.local import LocalServer
from tests.helpers import run_sparkscope, sparkscope_bin, wait_for


EXIT_AS_IT_SPAWNS = """
import sys, threading
from pathlib import Path
from sparkscope.server.local import LocalServer
from sparkscope.server.ports import free_port

server, spawned = LocalServer(Path(sys.argv[1])), threading.Event()
spawn, write_state = server._spawn, server._write_state

def spawn_and_say(*args):
    result = spawn(*args)
    spawned.set()
    return result

def write_once_the_main_thread_ended(info):
    while threading.main_thread().is_alive():
        spawned.wait(0.01)
    write_state(info)

server._spawn, server._write_state = spawn_and_say, write_once_the_main_thread_ended
threading.Thread(target=lambda: server.start(port=free_port()), daemon=True).start()
assert spawned.wait(120), "no spawn"
print("spawned")
"""


def _kill_servers_under(home: Path) -> list[int]:
    """The SIGKILLed pids of processes whose command line names `home` (a server nothing names)."""
    killed = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(home).encode() in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
        except OSError:
            continue
    return killed


def test_a_process_that_ends_as_its_server_spawns_leaves_the_server_named_in_its_state(tmp_path):
    home = tmp_path / "sparkscope"
    out = subprocess.run([sys.executable, "-c", EXIT_AS_IT_SPAWNS, str(home)], capture_output=True, text=True,
                         timeout=180)
    try:
        assert (out.returncode, out.stdout) == (0, "spawned\n"), out.stderr
        assert LocalServer(home).running() is not None, "a server runs that no state file names"
    finally:
        if LocalServer(home).stop(grace=10) is None:
            assert _kill_servers_under(home) == [], "a server ran that no state file named"


def test_a_port_another_program_takes_while_the_server_starts_moves_it_to_the_next_free_one(tmp_path, caplog):
    """Two servers starting at once on this machine both pick the first free port; the JVM that loses the bind
    starts again on the next free one, instead of failing after its whole start."""
    from sparkscope.client.connection.probe import probe

    local = LocalServer(tmp_path / "sparkscope")
    holder = socket.socket()
    taken: list[int] = []

    def take_its_port(elapsed: float, stage: str) -> None:  # as another server would, while this JVM starts
        if not taken and local.state_path.exists():  # written before the JVM is waited for, with the port picked
            port = json.loads(local.state_path.read_text())["port"]
            holder.bind(("127.0.0.1", port))
            holder.listen()
            taken.append(port)

    try:
        with caplog.at_level("WARNING", logger="sparkscope"):
            info = local.start(on_wait=take_its_port, timeout=240)
        assert taken and info.port != taken[0]
        assert probe(info.target(info.token), timeout=10).startswith("4.")
        assert f"Port {taken[0]} was taken by another program while the server started; starting it on port " \
               f"{info.port} instead" in caplog.text
    finally:
        holder.close()
        local.stop(grace=10)


def wait_for_the_recorder(cache: Path) -> None:
    """Until the background server that records the class archive has stopped (it removes its lock)."""
    wait_for(lambda: not (cache / "recorder.lock").exists(), timeout=240, every=0.5,
             what="the class archive's recording server to finish")


def test_a_stop_ends_the_class_archive_s_recorder_its_start_began(tmp_path, monkeypatch):
    """Issue 55 row 22: `server stop` right after a first start (and the pytest fixture's end) left the recorder and
    its JVM running for 30 to 90 s more."""
    from sparkscope.server.process_tree import spawned_by

    cache = tmp_path / "cache"
    monkeypatch.setenv("SPARKSCOPE_CLASS_CACHE", str(cache))
    local = LocalServer(tmp_path / "state")
    try:
        local.start(port=free_port())
        assert (cache / "recorder.lock").exists(), "no recorder was started"
        recorder = [p.pid for p in spawned_by(local.home) if "class_recording" in p.command]
        assert recorder, "the recorder does not carry the mark of the server whose start began it"
        wait_for(lambda: spawned_by(cache / "recorder"), timeout=120, every=0.5,
                 what="the recorder to start its JVM, once the server is idle")
    finally:
        local.stop(grace=10)
    wait_for(lambda: spawned_by(local.home) == [] and spawned_by(cache / "recorder") == [], timeout=30,
             what="the recorder and its JVM to end with the stop")
    assert LocalServer(cache / "recorder").running() is None
    wait_for(lambda: not (cache / "recorder.lock").exists(), timeout=30, what="the recorder's lock to go")


def test_the_class_archive_is_recorded_off_the_first_start_mapped_next_and_replaced_when_broken(tmp_path,
                                                                                                 monkeypatch):
    """A cold start maps the classes an earlier server loaded (AppCDS) instead of loading them again. The
    first start records nothing (recording made it 3 s slower): a server of its own records them in the
    background. A broken archive (the JVM dies of SIGBUS mapping a truncated one) must not keep the server
    from starting: it is removed, and a new one is recorded."""
    from sparkscope.server.class_cache import ClassCache
    from sparkscope.server.spark_install import java_path, pyspark_home

    cache = tmp_path / "cache"
    monkeypatch.setenv("SPARKSCOPE_CLASS_CACHE", str(cache))
    local = LocalServer(tmp_path / "state")
    archive = ClassCache(local.home, java_path(), pyspark_home()).archive
    left = local.scratch / "spark-0d1e5e2a" / "blockmgr-1"  # as a server that was killed leaves them
    left.mkdir(parents=True)
    first = local.start(port=free_port())
    try:
        assert first.class_recording is None, "the first start recorded the archive itself"
        assert not left.parent.exists(), "the temporary files of a killed server were left behind"
        assert (cache / "recorder.lock").exists(), "no server records the archive"
        wait_for_the_recorder(cache)
        assert archive.stat().st_size > 10_000_000, "the recording server wrote no class archive"
        assert not list(cache.glob("*.recording"))
        assert LocalServer(cache / "recorder").running() is None, "the recording server was left running"
    finally:
        local.stop()

    second = local.start(port=free_port())
    try:
        assert second.class_recording is None and not (cache / "recorder.lock").exists()
        assert str(archive) in Path(f"/proc/{second.pid}/maps").read_text(), "the JVM did not map the archive"
    finally:
        local.stop()

    with open(archive, "r+b") as fh:  # as a disk that filled up while it was copied would leave it
        fh.truncate(1_000_000)
    local.start(port=free_port())
    try:
        assert "A fatal error has been detected" in local.log_path.read_text(errors="replace")
        assert not list(Path.cwd().glob("hs_err_pid*.log")), "the JVM's crash report went to the current directory"
        assert list(local.home.glob("hs_err_pid*.log"))
        wait_for_the_recorder(cache)
        assert archive.stat().st_size > 10_000_000, "the broken archive was not recorded again"
    finally:
        local.stop()


def test_status_and_token_go_through_the_renderer_as_json(server):
    status = run_sparkscope("server", "status", "--format", "json")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert (shown["command"], shown["ok"], shown["data"]["pid"], shown["data"]["port"]) == (
        "server status", True, server.pid, server.port)
    assert shown["data"]["url"] == f"sc://localhost:{server.port}" and shown["data"]["spark"] == "4.3.0"
    token = run_sparkscope("server", "token", "--format", "json")
    assert json.loads(token.stdout) == {"command": "server token", "ok": True, "data": {"token": server.token}}


def _marked(home: Path) -> list[int]:
    """Every process whose environment names the server of the state dir `home` (none of this test's own)."""
    from sparkscope.server.process_tree import spawned_by

    return [process.pid for process in spawned_by(home)]


def _leave_queries_running(info, *, foreach_batch: int, busy: Path | None = None) -> None:
    """A default ss.start and `foreach_batch` foreachBatch queries, left running on the server of `info`. With `busy`,
    the last one's function makes that file and then works for an hour: its Python worker is in the user's code, not
    waiting on the JVM, so it outlives a kill of the JVM for certain."""
    import sparkscope

    def working(df, batch, flag=str(busy)):
        import pathlib
        import time

        pathlib.Path(flag).touch()
        time.sleep(3600)  # the user's long foreachBatch

    ss = sparkscope.connect(f"sc://localhost:{info.port}/;token={info.token}")
    try:
        ss.start(ss.source.rate(5), "kept")
        for index in range(foreach_batch):
            last = busy is not None and index == foreach_batch - 1
            ss.start(ss.source.rate(5), f"each{index}", foreach_batch=working if last else lambda df, batch: None)
    finally:
        ss.close(stop_queries=False)


def test_server_stop_ends_every_process_the_server_started_after_a_stop_or_a_crash(tmp_path):
    """foreachBatch workers outlive the JVM that started them (parent pid 1, 165 MB each): `server stop` ends them,
    and after a kill -9 of the JVM the next `server stop` or `server start` finds them by the state dir in their
    environment and ends them, saying so."""
    home = tmp_path / "sparkscope"
    local = LocalServer(home)
    try:
        info = local.start(port=free_port(), conf={"spark.sql.shuffle.partitions": "2"})
        busy = tmp_path / "busy-before-stop"
        _leave_queries_running(info, foreach_batch=2, busy=busy)
        wait_for(busy.exists, 90, what="the foreachBatch function to run in its Python worker")
        out = run_sparkscope("server", "stop", home=tmp_path)
        assert out.returncode == 0, out.stderr
        assert re.fullmatch(r"Ended the processes it had started: [1-9]\d* Python workers? \([\d,]+ MB\)\.",
                            out.stdout.splitlines()[-1]), out.stdout
        wait_for(lambda: _marked(home) == [], 30, what="no process of the stopped server left")

        for then in ("stop", "start"):  # a crash, then the next stop or start
            info = local.start(port=free_port(), conf={"spark.sql.shuffle.partitions": "2"})
            busy = tmp_path / f"busy-before-{then}"
            _leave_queries_running(info, foreach_batch=1, busy=busy)
            wait_for(busy.exists, 90, what="the foreachBatch function to run in its Python worker")
            os.kill(info.pid, signal.SIGKILL)
            status = run_sparkscope("server", "status", home=tmp_path)
            # its busy foreachBatch worker at least (the UDF's workers, which asked what the server can run, may be gone)
            assert status.returncode == 3 and re.match(
                r"No local server is running, but the last one left processes running: \d+ Python workers? \(",
                status.stdout), status.stdout
            out = run_sparkscope("server", then, "--port", str(free_port()), home=tmp_path) if then == "start" else \
                run_sparkscope("server", "stop", home=tmp_path)
            assert out.returncode == 0, out.stderr
            said = out.stdout if then == "stop" else out.stderr
            assert re.search(r"Ended what the last (one|server of \S+) left running when it ended without a stop: "
                             r"\d+ Python workers? \([\d,]+ MB\)", said), (out.stdout, out.stderr)
            running = LocalServer(home).running()
            own = {running.pid} if running else set()
            wait_for(lambda own=own: set(_marked(home)) - own <= {p.pid for p in LocalServer(home).processes()
                                                                  if p.kind == "log writer"}, 5,
                     what="nothing of the crashed server left")
    finally:
        local.stop(grace=10)
        leftover = _marked(home)
        for pid in leftover:  # this test's own processes, found by its own state dir
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        assert leftover == []


def test_two_cold_starts_at_once_start_one_server_that_status_sees_and_stop_stops(tmp_path):
    """Two `sparkscope --port P -c …` from a cold state dir at the same moment: the second waits for the first one's
    server and uses it; nothing deletes the state of the live server."""
    home, port = tmp_path / "sparkscope", free_port()
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"}
    env["XDG_STATE_HOME"] = str(tmp_path)
    cell = "print('rows', spark.range(3).count())"
    both = [subprocess.Popen([sparkscope_bin(), "--port", str(port), "-c", cell], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        outputs = [process.communicate(timeout=300) for process in both]
        for process, (stdout, stderr) in zip(both, outputs, strict=True):
            assert (process.returncode, stdout.splitlines()[-1:]) == (0, ["rows 3"]), stderr
            assert "taken" not in stderr, stderr
        status = run_sparkscope("server", "status", home=tmp_path)
        assert status.returncode == 0, status.stdout + status.stderr
        assert f"sc://localhost:{port}" in status.stdout
        servers = _java_servers_under(home)
        assert len(servers) == 1, f"{len(servers)} server JVMs of one state dir"
        out = run_sparkscope("server", "stop", home=tmp_path)
        assert out.returncode == 0, out.stderr
        wait_for(lambda: _java_servers_under(home) == [], 30, what="the one server stopped")
    finally:
        for process in both:
            if process.poll() is None:
                process.kill()
        if LocalServer(home).stop(grace=10) is None:
            assert _kill_servers_under(home) == [], "a server ran that no state file named"


def test_a_command_run_while_server_start_starts_it_waits_for_it(tmp_path):
    """Issue 55 row 20: `sparkscope server start &`, then `sparkscope -c …` a second later, said the server could
    not be reached (its state file named a server not answering yet) and exited 2."""
    home, port = tmp_path / "sparkscope", free_port()
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"}
    env["XDG_STATE_HOME"] = str(tmp_path)
    starting = subprocess.Popen([sparkscope_bin(), "server", "start", "--port", str(port)], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: (home / "server.json").exists() or starting.poll() is not None, 120,
                 what="the start to write the server's state")
        ran = subprocess.run([sparkscope_bin(), "-c", "print('rows', spark.range(3).count())"], env=env, text=True,
                             capture_output=True, timeout=300)
        assert (ran.returncode, ran.stdout.splitlines()[-1:]) == (0, ["rows 3"]), ran.stderr
        assert starting.wait(timeout=300) == 0
    finally:
        if starting.poll() is None:
            starting.kill()
        LocalServer(home).stop(grace=10)


def _java_servers_under(home: Path) -> list[int]:
    """The pids of Spark Connect server JVMs whose command line names the state dir `home`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
        except OSError:
            continue
        if str(home).encode() in cmdline and b"SparkConnectServer" in cmdline:
            found.append(int(proc.name))
    return found
