"""The embedded local server: start, reuse, status, stale pid, port taken, token auth, stop."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from sparkscope.client.errors import AuthenticationFailed, ConnectionFailed, ServerError
from sparkscope.server.ports import free_port
from sparkscope.server.local import LocalServer
from tests.helpers import run_sparkscope, wait_for



def test_start_again_reuses_the_running_server(server):
    out = run_sparkscope("server", "start")
    assert out.returncode == 0, out.stderr
    assert f"already running: sc://localhost:{server.port} (pid {server.pid}, Spark 4.3.0, token required)" in out.stdout


def test_status_shows_pid_port_url_uptime_version_and_log(server):
    out = run_sparkscope("server", "status")
    assert out.returncode == 0
    lines = dict(line.split(None, 1) for line in out.stdout.strip().splitlines())
    assert lines["pid"] == str(server.pid)
    assert lines["port"] == str(server.port)
    assert lines["url"] == f"sc://localhost:{server.port}"
    assert lines["spark"] == "4.3.0"
    assert lines["log"].endswith("sparkscope/server.log")
    from sparkscope.server.sizing import default_driver_memory

    assert re.fullmatch(rf"driver heap {default_driver_memory()}, resident \d+\.\d GiB "
                        r"\(sparkscope server start --driver-memory SIZE\)", lines["memory"]), lines["memory"]
    assert re.fullmatch(r"(\d+h \d{2}m|\d+m) \d{2}s", lines["uptime"]), lines["uptime"]


def test_status_and_stop_of_another_port_say_that_one_server_runs_per_state_dir(server, sandbox):
    mine = run_sparkscope("server", "status", "--port", str(server.port))
    assert mine.returncode == 0 and f"port    {server.port}" in mine.stdout
    for action in ("status", "stop"):
        other = run_sparkscope("server", action, "--port", str(server.port + 1))
        assert other.returncode == 1 and other.stderr.strip() == (
            f"error: The local server of this state dir runs on port {server.port}, not {server.port + 1}. One server "
            f"runs per state dir ({sandbox / 'state' / 'sparkscope'}): leave out --port, or choose another state dir "
            "with XDG_STATE_HOME."), other.stderr
    assert run_sparkscope("server", "status").returncode == 0  # the stop of another port stopped nothing


def test_server_binds_loopback_only(server):
    cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
    assert b"spark.connect.grpc.binding.port=%d" % server.port in b" ".join(cmdline)
    # the kernel's table of listening sockets: the port is bound to 127.0.0.1 and to nothing else
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.split(":")
            if state == "0A" and int(port, 16) == server.port:
                listening.append(address)
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1 (and as IPv4-mapped IPv6), hex
    assert listening and set(listening) <= loopback, listening


def test_the_servers_temporary_files_are_under_the_state_dir(server, ss, sandbox):
    scratch = sandbox / "state" / "sparkscope" / "tmp"
    assert ss.spark.range(1000).repartition(3).count() == 1000  # shuffle files
    names = [path.name for path in scratch.iterdir()]
    assert any(name.startswith("blockmgr-") for name in names) and any(name.startswith("spark-") for name in names)
    assert f"-Djava.io.tmpdir={scratch}" in Path(f"/proc/{server.pid}/cmdline").read_text().replace("\0", " ")


def test_tables_are_written_under_the_state_dir_not_the_current_directory(server, ss, sandbox):
    server_cwd = Path(os.readlink(f"/proc/{server.pid}/cwd"))
    ss.spark.range(3).write.saveAsTable("kept_table")
    try:
        assert ss.sql("SELECT count(*) FROM kept_table").rows == [(3,)]
        assert (sandbox / "state" / "sparkscope" / "warehouse" / "kept_table").is_dir()
        assert not (server_cwd / "spark-warehouse" / "kept_table").exists()
    finally:
        ss.sql("DROP TABLE kept_table")


def test_the_server_log_never_holds_its_token(server, ss, sandbox):
    """pyspark's foreachBatch worker prints the server's URL with its token when it starts; the server's output
    reaches the disk through log_writer, which hides it."""
    query = ss.start(ss.source.rate(5), "logged", foreach_batch=lambda df, batch: None)
    wait_for(lambda: query.progress, what="a batch")
    query.stop()
    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    text = (sandbox / "state" / "sparkscope" / "server.log").read_text()
    assert "Streaming ForeachBatch worker is starting with url sc://localhost:" in text
    assert token not in text and ";token=***" in text
    out = run_sparkscope("server", "logs", "-n", "1000000")
    assert out.returncode == 0
    assert "Spark Connect server started at: 127.0.0.1:%d" % server.port in out.stdout
    assert "Streaming ForeachBatch worker is starting with url" in out.stdout
    assert token not in out.stdout


def test_stale_pid_file_is_cleaned_up(tmp_path):
    local = LocalServer(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    local.state_path.write_text(json.dumps({"pid": dead.pid, "port": 1, "started_at": 0, "log": "x"}))
    assert local.running() is None
    assert not local.state_path.exists()
    assert local.stop() is None


def test_port_taken_by_another_program_is_a_clear_error(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ServerError) as err:
            LocalServer(tmp_path).start(port=port)
    assert str(err.value) == f"Port {port} is already in use by another program. Pick another port with --port N."


def test_port_taken_from_the_command_line(server, tmp_path):
    out = run_sparkscope("server", "start", "--port", str(server.port), env={"XDG_STATE_HOME": str(tmp_path)})
    assert out.returncode == 2
    assert out.stderr.strip() == (f"error: Port {server.port} is already in use by another program. "
                                  "Pick another port with --port N.")
    assert "Traceback" not in out.stderr


def test_missing_java_is_one_line_with_install_hint(tmp_path):
    # a port of its own: with the default one, a server of the user's on 15002 adds a "port is taken" notice
    out = run_sparkscope("server", "start", "--port", str(free_port()), env={"XDG_STATE_HOME": str(tmp_path), "PATH": "/nonexistent",
                                      "JAVA_HOME": ""}, timeout=30)
    # spark-submit is never reached: java is checked first
    assert out.returncode == 2
    assert out.stderr.strip() == ("error: Java is not installed (no 'java' on PATH). Install Java 17 or newer, "
                                  "e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME.")


def test_stop_without_a_server_says_so(tmp_path):
    out = run_sparkscope("server", "stop", env={"XDG_STATE_HOME": str(tmp_path)})
    assert out.returncode == 0
    assert out.stdout.strip() == "No local server is running."


def test_token_server_accepts_right_token_rejects_wrong_and_missing(tmp_path):
    """A second server with token auth; the token reaches it through the environment, never argv."""
    import sparkscope

    token = "s3cret-token-for-tests"
    local = LocalServer(tmp_path)
    info = local.start(port=free_port(), token=token)
    try:
        argv = Path(f"/proc/{info.pid}/cmdline").read_bytes().decode(errors="replace")
        assert token not in argv
        with sparkscope.connect(f"sc://localhost:{info.port}/;token={token}") as ss:
            assert ss.spark.range(3).count() == 3
            assert token not in ss.url and token not in repr(ss)
        with pytest.raises(AuthenticationFailed) as wrong:
            sparkscope.connect(f"sc://localhost:{info.port}/;token=wrong")
        assert "authentication failed" in str(wrong.value) and "wrong" not in str(wrong.value)
        with pytest.raises(AuthenticationFailed) as missing:
            sparkscope.connect(f"sc://localhost:{info.port}")
        assert "SPARK_CONNECT_AUTHENTICATE_TOKEN" in str(missing.value)
        token_in_log = token in local.log_path.read_text(errors="replace")
        assert not token_in_log
        survivor = sparkscope.connect(f"sc://localhost:{info.port}/;token={token}")
    finally:
        stopped = local.stop(grace=10)
    assert stopped is not None and stopped.pid == info.pid
    with pytest.raises(ConnectionFailed) as gone:  # the server went away under an open session
        survivor.streams.queries()
    assert str(gone.value) == ("The Spark Connect server is not reachable. "
                               "Check that it is running (sparkscope.LocalServer().status(), for the embedded "
                               "server) and the URL is right.")
    assert token not in str(gone.value) and token not in repr(gone.value.__cause__)
    survivor.close()
    assert not os.path.exists(f"/proc/{info.pid}") or b"Z" in Path(f"/proc/{info.pid}/stat").read_bytes()[:60]
    assert local.running() is None


def test_unreachable_server_fails_fast_with_one_line():
    import sparkscope

    port = free_port()
    with pytest.raises(ConnectionFailed) as err:
        sparkscope.connect(f"sc://localhost:{port}", timeout=2)
    assert str(err.value) == (f"Cannot reach a Spark Connect server at localhost:{port}. "
                              "Check the URL and that the server is running (sparkscope.LocalServer().status(), "
                              "for the embedded server).")


@pytest.mark.parametrize("flags, message", [
    (["--port", "99999"], "error: argument --port: '99999' is not a port: use a number from 1 to 65535."),
    (["--port", "-1"], "error: argument --port: '-1' is not a port: use a number from 1 to 65535."),
    (["--timeout", "-1"], "error: argument --timeout: '-1' is not a number of seconds: use a positive number, e.g. 30."),
    (["--timeout", "nan"], "error: argument --timeout: 'nan' is not a number of seconds: use a positive number, e.g. 30."),
])
def test_bad_start_flags_are_one_line(tmp_path, flags, message):
    out = run_sparkscope("server", "start", *flags, env={"XDG_STATE_HOME": str(tmp_path)})
    assert out.returncode == 2
    assert out.stderr.strip() == message + " Run 'sparkscope server start --help' for usage."
    assert not (tmp_path / "sparkscope" / "server.json").exists()


@pytest.mark.parametrize("flags, cause", [
    (["--conf", "spark.sql.shuffle.partitions=abc"],
     "The value 'abc' in the config \"spark.sql.shuffle.partitions\" is invalid. It should be a/an 'int' value."),
    (["--master", "nonsense"], "Master must either be yarn or start with spark, k8s, or local."),
])
def test_a_server_that_cannot_start_says_why_at_once(tmp_path, flags, cause):
    """Was: the whole start timeout, then "did not answer" (bad conf), or a stack frame (bad master)."""
    out = run_sparkscope("server", "start", "--port", str(free_port()), "--timeout", "120", *flags,
              env={"XDG_STATE_HOME": str(tmp_path)})
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert cause in out.stderr and "at org." not in out.stderr
    assert LocalServer(tmp_path / "sparkscope").running() is None



def test_a_taken_default_port_moves_the_embedded_server_to_the_next_free_one(tmp_path):
    from sparkscope.client.connection.remote import DEFAULT_PORT

    env = {"XDG_STATE_HOME": str(tmp_path)}
    holder = socket.socket()
    try:
        try:  # take 15002 ourselves, unless another program already holds it
            holder.bind(("127.0.0.1", DEFAULT_PORT))
            holder.listen()
        except OSError:
            pass
        out = run_sparkscope("server", "start", env=env)
        assert out.returncode == 0, out.stderr
        port = int(re.search(r"sc://localhost:(\d+)", out.stdout).group(1))
        assert port != DEFAULT_PORT
        assert out.stderr.strip() == (f"notice: Port {DEFAULT_PORT} is taken by another program or server; the "
                                      f"embedded server uses port {port} (sparkscope --port N picks one)")
        listed = run_sparkscope("-c", ":session", env=env)  # nothing configured: this state dir's server, on its port
        assert listed.returncode == 0, listed.stderr
        assert f"sc://localhost:{port}" in listed.stdout
        other = port + 1 if port < 65535 else port - 1
        wrong = run_sparkscope("--port", str(other), "-c", ":queries", env=env)
        assert wrong.returncode == 2
        assert wrong.stderr.strip() == (f"error: The local server already runs on port {port}, not {other}. "
                                        "Leave out --port, or stop it first: sparkscope server stop.")
    finally:
        holder.close()
        LocalServer(tmp_path / "sparkscope").stop(grace=10)


# A process whose server start runs on a daemon thread (the REPL's) ends just after the server's spawn, before its
# state file is written: the REPL's :quit during a cold start, at its worst moment.
