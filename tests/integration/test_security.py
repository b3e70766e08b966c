"""Security: tokens enforced however they are given, the embedded server locked by default, no token
in clear on the wire or in any output, `server stop` never signals a stranger, private files.

All network traffic stays on loopback. One extra server (token from the environment) is started
for the module; the session's own server is the default, random-token case.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pexpect
import pytest

import sparkscope
from sparkscope.client.errors import AuthenticationFailed, ConnectionFailed
from sparkscope.server.ports import free_port
from sparkscope.server.local import LocalServer
from tests.helpers import run_sparkscope, skip_or_fail
from tests.netproxy import Proxy

ENV_TOKEN = "secret123-Env+token/with=signs=="



PLAIN_PYSPARK = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.client.retries import RetryPolicy
    spark = SparkSession.builder.remote(sys.argv[1]).create()
    spark.client.set_retry_policies([RetryPolicy(max_retries=0)])
    try:
        print("answer", spark.range(7).count())
    except Exception as exc:
        print("refused:", type(exc).__name__, str(exc).splitlines()[0][:200])
""")


def plain_pyspark(url: str, token: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"}
    if token:
        env["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = token
    out = subprocess.run([sys.executable, "-c", PLAIN_PYSPARK, url], capture_output=True, text=True, timeout=120,
                         env=env)
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def env_server(tmp_path_factory):
    """A server started by `sparkscope server start` with the token in SPARK_CONNECT_AUTHENTICATE_TOKEN."""
    home = tmp_path_factory.mktemp("env-server")
    port = free_port()
    local = LocalServer(home / "sparkscope")
    try:  # stopped also when the start itself failed or timed out half way
        out = run_sparkscope("server", "start", "--port", str(port), env={"XDG_STATE_HOME": str(home),
                                                               "SPARK_CONNECT_AUTHENTICATE_TOKEN": ENV_TOKEN})
        assert out.returncode == 0, out.stderr
        assert "token required" in out.stdout and ENV_TOKEN not in out.stdout + out.stderr
        yield local, port, home
    finally:
        local.stop(grace=10)


def test_token_from_the_environment_is_enforced_and_never_in_argv(env_server, tmp_path):
    local, port, _ = env_server
    info = local.running()
    assert ENV_TOKEN not in Path(f"/proc/{info.pid}/cmdline").read_bytes().decode(errors="replace")
    stranger = {"XDG_STATE_HOME": str(tmp_path)}  # another state dir: no token file to read
    missing = run_sparkscope("--remote", f"sc://localhost:{port}", "-c", ":queries", env=stranger)
    assert missing.returncode == 2
    assert missing.stderr.strip() == (f"error: sc://localhost:{port} refused the connection: authentication failed. "
                                      "Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN.")
    wrong = run_sparkscope("--remote", f"sc://localhost:{port}", "-c", ":queries",
                env={**stranger, "SPARK_CONNECT_AUTHENTICATE_TOKEN": "not-the-token"})
    assert wrong.returncode == 2 and "authentication failed" in wrong.stderr and "not-the-token" not in wrong.stderr
    right = run_sparkscope("--remote", f"sc://localhost:{port}", "-c", ":queries",
                env={**stranger, "SPARK_CONNECT_AUTHENTICATE_TOKEN": ENV_TOKEN})
    assert right.returncode == 0, right.stderr
    assert "no queries" in right.stdout
    assert "refused: SparkConnectGrpcException" in plain_pyspark(f"sc://localhost:{port}")
    assert "answer 7" in plain_pyspark(f"sc://localhost:{port}", token=ENV_TOKEN)


def test_token_from_a_profile_is_enforced(env_server, tmp_path):
    _, port, _ = env_server
    config = tmp_path / "sparkscope" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[profiles.shared]\nremote = "sc://localhost:{port}"\ntoken_env = "SHARED_TOKEN"\n'
                      f'[profiles.badtoken]\nremote = "sc://localhost:{port}"\ntoken = "wrong-token"\n')
    os.chmod(config, 0o600)
    env = {"XDG_CONFIG_HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    good = run_sparkscope("--profile", "shared", "-c", ":queries", env={**env, "SHARED_TOKEN": ENV_TOKEN})
    assert good.returncode == 0, good.stderr
    unset = run_sparkscope("--profile", "shared", "-c", ":queries", env=env)
    assert unset.returncode == 2 and "authentication failed" in unset.stderr
    bad = run_sparkscope("--profile", "badtoken", "-c", ":queries", env=env)
    assert bad.returncode == 2 and "nor a user's it knows" in bad.stderr and "wrong-token" not in bad.stderr


def test_the_default_embedded_server_has_a_private_random_token(server, sandbox):
    home = sandbox / "state" / "sparkscope"
    token_file = home / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    assert len(token) >= 32
    assert token not in Path(f"/proc/{server.pid}/cmdline").read_bytes().decode(errors="replace")
    status = run_sparkscope("server", "status")
    assert status.returncode == 0
    fields = dict(line.split(None, 1) for line in status.stdout.strip().splitlines())
    assert fields["spark"] == "4.3.0"  # a token-protected server is healthy, not "not answering"
    assert fields["auth"].startswith("token required")
    assert token not in status.stdout
    printed = run_sparkscope("server", "token")
    assert printed.returncode == 0 and printed.stdout.strip() == token and printed.stderr == ""
    url = f"sc://localhost:{server.port}"
    assert "refused: SparkConnectGrpcException" in plain_pyspark(url)
    assert "answer 7" in plain_pyspark(url, token=printed.stdout.strip())


def test_no_token_is_an_explicit_choice_with_a_warning(server, tmp_path):
    out = run_sparkscope("server", "start", "--no-token", "--port", str(server.port), env={"XDG_STATE_HOME": str(tmp_path)})
    assert out.stderr.splitlines()[0] == ("warning: --no-token lets every user of this machine run code as you "
                                          "through the server")


def test_the_probe_never_sends_a_token_in_clear(server):
    token = (Path(os.environ["XDG_STATE_HOME"]) / "sparkscope" / "token").read_text().strip()
    with Proxy(server.port) as proxy:
        # not 'localhost': pyspark would use TLS here, so must the probe; plaintext would leak the token
        with pytest.raises(ConnectionFailed) as err:
            sparkscope.connect(f"sc://127.0.0.1:{proxy.port}/;token={token}", timeout=3)
        assert "TLS" in str(err.value) and token not in str(err.value)
        assert token.encode() not in bytes(proxy.sent)
        assert b"Bearer" not in bytes(proxy.sent)


@pytest.mark.parametrize("token", ["c2VjcmV0MTIz==", "a;b=c%d e", "tok'en\"with\\quotes"])
def test_tokens_with_special_characters_never_show(server, token):
    import urllib.parse

    quoted = urllib.parse.quote(token, safe="")
    with pytest.raises(AuthenticationFailed) as err:
        sparkscope.connect(f"sc://localhost:{server.port}/;token={quoted}", timeout=5)
    text = str(err.value) + repr(err.value) + str(err.value.__cause__ or "")
    assert token not in text and quoted not in text
    raw = run_sparkscope("--remote", f"sc://localhost:{server.port}/;token={token}", "-c", ":queries")
    assert raw.returncode == 2 and "Traceback" not in raw.stderr
    assert len(raw.stderr.strip().splitlines()) == 1
    for piece in (token, quoted, "c2VjcmV0MTIz"):
        assert piece not in raw.stdout + raw.stderr


def _decoy(port: int) -> subprocess.Popen:
    """A process that looks like the server on its command line, and is not it (it waits for a signal)."""
    return subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()",
                             "org.apache.spark.sql.connect.service.SparkConnectServer",
                             f"--conf spark.connect.grpc.binding.port={port}"])


@pytest.mark.parametrize("started", ["now", "long ago"])
def test_server_stop_never_kills_a_decoy_from_the_pid_file(tmp_path, started):
    import json

    port = free_port()
    decoy = _decoy(port)
    try:
        state = tmp_path / "sparkscope"
        state.mkdir(mode=0o700)
        (state / "server.json").write_text(json.dumps({
            "pid": decoy.pid, "port": port, "started_at": time.time() if started == "now" else 1.0,
            "log": "x", "auth": False, "ready": True}))
        env = {"XDG_STATE_HOME": str(tmp_path)}
        status = run_sparkscope("server", "status", env=env)
        assert status.returncode == 3 and "No local server is running" in status.stdout
        stop = run_sparkscope("server", "stop", env=env)
        assert stop.returncode == 0 and stop.stdout.strip() == "No local server is running."
        assert decoy.poll() is None, "the decoy was killed"
    finally:
        decoy.send_signal(signal.SIGKILL)
        decoy.wait()


def test_a_pid_of_another_user_is_never_signalled(tmp_path):
    import json
    import shutil

    if os.getuid() != 0 or not shutil.which("setpriv"):
        skip_or_fail("needs root and setpriv to run a process as another user")
    port = free_port()
    other = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                              "import signal; signal.pause()", "org.apache.spark.sql.connect.service.SparkConnectServer",
                              f"--conf spark.connect.grpc.binding.port={port}"])
    try:
        state = tmp_path / "sparkscope"
        state.mkdir(mode=0o700)
        (state / "server.json").write_text(json.dumps({"pid": other.pid, "port": port, "started_at": time.time(),
                                                       "log": "x", "ready": False}))
        stop = run_sparkscope("server", "stop", env={"XDG_STATE_HOME": str(tmp_path)})
        assert stop.returncode == 0 and "Traceback" not in stop.stderr
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_state_files_are_private_and_a_loose_state_dir_is_tightened(server, sandbox, tmp_path):
    home = sandbox / "state" / "sparkscope"
    for path, mode in [(home, 0o700), (home / "checkpoints", 0o700), (home / "warehouse", 0o700),
                       (home / "token", 0o600), (home / "server.json", 0o600), (home / "server.log", 0o600)]:
        assert stat.S_IMODE(path.stat().st_mode) == mode, path
    loose = tmp_path / "sparkscope"
    loose.mkdir()
    os.chmod(loose, 0o755)
    out = run_sparkscope("server", "stop", env={"XDG_STATE_HOME": str(tmp_path)})
    assert out.returncode == 0
    assert out.stderr.strip() == (f"notice: {loose} was readable by other users (mode 755); "
                                  "made it private (0700)")
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700


def test_a_made_up_session_id_is_refused_not_silently_new(remote_url):
    made_up = str(uuid.uuid4())
    with pytest.raises(ConnectionFailed) as err:
        sparkscope.connect(remote_url, session_id=made_up)
    assert str(err.value) == (f"The server has no session {made_up} of this user (it was closed, timed out, the "
                              "server restarted, or it is another user's). Connect without session_id to open a new "
                              "session.")
    assert err.value.code == "session_unknown" and err.value.data == {"session_id": made_up}
    made_up = str(uuid.uuid4())  # that one is now a closed session on the server: another
    out = run_sparkscope("--remote", remote_url, "--session-id", made_up, "-c", ":queries")
    assert out.returncode == 2 and out.stderr.strip() == (
        f"error: The server has no session {made_up} of this user (it was closed, timed out, the server restarted, or "
        "it is another user's). "
        "Connect without --session-id to open a new session.")


def test_close_returns_when_the_network_freezes(server, sandbox):
    """A frozen connection used to block close() forever (removeListener waits with no deadline)."""
    import threading

    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    with Proxy(server.port) as proxy:
        ss = sparkscope.connect(f"sc://localhost:{proxy.port}/;token={token}")
        query = ss.start(ss.source.rate(5), "frozen_close")
        seen = threading.Event()
        ss.streams.monitor.subscribe(lambda event: seen.set() if event.kind == "progress" else None)
        assert seen.wait(60), "no progress event arrived"
        session_id = ss.session_id
        proxy.freeze()
        closer = threading.Thread(target=ss.close, daemon=True)
        closer.start()
        closer.join(90)  # a liveness bound, far above the deadlines: without them this never returns
        assert not closer.is_alive(), "Session.close() hung on the frozen network"
        proxy.thaw()
    with sparkscope.connect(f"sc://localhost:{server.port}", session_id=session_id) as again:
        again.streams.stop_all()  # the abandoned stop may not have reached the server
    assert query.id


def test_connect_after_a_server_restart_opens_a_new_session(env_server):
    """The server forgets sessions when it restarts; :connect used to answer "Already connected"."""
    from tests.e2e.conftest import Repl, spawn

    local, port, home = env_server
    child = spawn("--remote", f"sc://localhost:{port}", env={"XDG_STATE_HOME": str(home)})
    repl = Repl(child)
    repl.prompt()
    assert "(no queries" in repl.run(":queries")  # connected
    assert repl.run(":connect").strip().startswith(f"Already connected to sc://localhost:{port} (session ")
    local.stop(grace=10)
    again = run_sparkscope("server", "start", "--port", str(port), env={"XDG_STATE_HOME": str(home),
                                                             "SPARK_CONNECT_AUTHENTICATE_TOKEN": ENV_TOKEN})
    assert again.returncode == 0, again.stderr
    out = repl.run(":connect", timeout=90)
    assert re.search(rf"Connected to sc://localhost:{port} \(session [0-9a-f]{{8}}, Spark 4\.3\.0\)\.", out), out
    assert "(no queries" in repl.run(":queries")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=60)
