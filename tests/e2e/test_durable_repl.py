"""Durable queries in a real terminal: a server killed and started again, the lost query listed and
brought back with :restart --lost; a REPL killed -9 and its session found again with --reattach."""

from __future__ import annotations

import os
import re
import signal

import pexpect
import pytest

from sparkscope.server.ports import free_port
from sparkscope.server.local import LocalServer
from tests.e2e.conftest import Repl, Screen, spawn
from tests.helpers import run_sparkscope, wait_for


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    """A server that may be killed, with a state dir (catalog, token) of its own."""
    home = tmp_path_factory.mktemp("durable-repl")
    port = free_port()
    env = {"XDG_STATE_HOME": str(home)}
    local = LocalServer(home / "sparkscope")
    try:  # stopped also when the start itself failed or timed out half way
        started = run_sparkscope("server", "start", "--port", str(port), env=env)
        assert started.returncode == 0, started.stderr
        yield local, port, env
    finally:
        local.stop(grace=10)


def wait_for_batches(repl: Repl, name: str) -> int:
    def batch():
        match = re.search(rf"\| {name}\s+\| [0-9a-f]{{8}} \| active .*?\| (\d+)\s+\|", repl.run(":queries"))
        return int(match.group(1)) + 1 if match and int(match.group(1)) >= 1 else None

    return wait_for(batch, timeout=60, every=0.5, what=f"{name} to make batches") - 1


def open_repl(url: str, env: dict, *flags: str):
    child = spawn("--remote", url, *flags, env=env)
    repl = Repl(child)
    repl.prompt()
    return child, repl


def test_a_lost_query_is_listed_and_restarted_after_the_server_is_killed(own_server):
    local, port, env = own_server
    url = f"sc://localhost:{port}"
    child, repl = open_repl(url, env)
    repl.run("counts = ss.source.rate(5).groupBy((col('value') % 3).alias('k')).count()")
    assert "Started counts" in repl.run(":start counts")
    wait_for_batches(repl, "counts")
    os.kill(local.running().pid, signal.SIGKILL)
    repl.expect(re.escape(f"note: The server at {url} went away, and its queries stopped with it. "
                          "When it is back: :connect, then :restart --lost"), timeout=30)
    repl.prompt()
    assert run_sparkscope("server", "start", "--port", str(port), env=env).returncode == 0
    out = repl.run(":connect")
    assert re.search(r"Lost since the server restarted or their session ended: counts \(last seen "
                     r"\d\d:\d\d:\d\d, batch \d+\)\.", out), out
    assert "Nothing was restarted. :restart --lost brings them back from their checkpoints" in out
    assert re.search(r"\| counts\s+\|( [0-9a-f]{8} \|)? lost ", repl.run(":queries --all"))
    out = repl.run(":restart --lost")
    assert re.search(r"Restarted counts \(id [0-9a-f]{8}\) from its checkpoint \(after batch \d+\) → memory sink, "
                     r"complete mode", out), out
    assert re.search(r"\| counts\s+\| [0-9a-f]{8} \| active", repl.run(":queries"))
    assert re.search(r"\| counts\s+\|( [0-9a-f]{8} \|)? active ", repl.run(":queries --all"))
    repl.run(":stop counts")
    child.sendcontrol("d")  # nothing runs any more: it leaves without a question
    child.expect(pexpect.EOF, timeout=30)


def test_reattach_after_the_repl_was_killed_finds_the_running_query(own_server):
    local, port, env = own_server
    url = f"sc://localhost:{port}"
    first, repl = open_repl(url, env)
    assert "Started orphan" in repl.run(":start orphan ss.source.rate(1)")
    first.kill(signal.SIGKILL)  # no goodbye: the session and its query stay on the server
    first.close(force=True)
    second, again = open_repl(url, env, "--reattach")
    assert re.search(r"\| orphan\s+\| [0-9a-f]{8} \| active", again.run(":queries"))
    again.run(":stop orphan")
    second.sendcontrol("d")
    second.expect(pexpect.EOF, timeout=30)


def test_a_repl_killed_while_listening_then_reattached_restarts_starts_runs_pyspark_s_own_start_and_watches_live(own_server):
    """The killed REPL's live-event listener stays on the server, which keeps one per session: the rejoined session
    replaces it. Before, pyspark's registration waited forever for an answer while holding its listener bus's lock,
    and every query start (which posts onQueryStarted under that lock) hung until the command timed out."""
    local, port, env = own_server
    url = f"sc://localhost:{port}"
    first, repl = open_repl(url, env)
    assert "Started k9" in repl.run(":start k9 ss.source.rate(5)")
    wait_for_batches(repl, "k9")  # the listener delivers its progress
    first.kill(signal.SIGKILL)
    first.close(force=True)
    second, again = open_repl(url, env, "--reattach")
    assert "Stopped k9" in again.run(":stop k9", timeout=30)
    assert re.search(r"Restarted k9 \(id [0-9a-f]{8}\) from its checkpoint", again.run(":restart k9", timeout=30))
    assert "Started k9b" in again.run(":start k9b ss.source.rate(1)", timeout=30)
    assert "active True" in again.run("h = ss.source.rate(1).writeStream.format('memory').queryName('k9c').start(); "
                                      "print('active', h.isActive)", timeout=30)
    running = again.run(":queries")
    assert all(re.search(rf"\| {name}\s+\| [0-9a-f]{{8}} \| active", running) for name in ("k9", "k9b", "k9c"))
    catalog = again.run(":queries --all")
    assert all(re.search(rf"\| {name}\s+\|( [0-9a-f]{{8}} \|)? [0-9a-f]{{8}} \| active", catalog)
               for name in ("k9", "k9b", "k9c")), catalog
    wait_for_batches(again, "k9b")  # live progress reaches the rejoined session
    second.send(":watch\r")  # issue 55 row 41: it said "live (polling)", live events not available
    screen = Screen(second)
    screen.wait_for(lambda t: "sparkscope :watch" in t and "k9b" in t, what="the dashboard")
    assert "live (listener)" in screen.text and "not available" not in screen.text, screen.text
    second.send("q")
    again.prompt()
    assert "Stopped" in again.run(":stop --all")
    second.sendcontrol("d")
    second.expect(pexpect.EOF, timeout=30)


def test_a_server_restarted_under_a_session_with_the_same_token_is_named_as_restarted(own_server):
    """As with a cluster's server restarted by its admin: same port, same token, a new server. Each call of the old
    session says that the server restarted, not that a DataFrame belongs to a closed session; :connect goes on."""
    local, port, env = own_server
    token = local.token()
    url = f"sc://localhost:{port}"
    child, repl = open_repl(url, {**env, "SPARK_CONNECT_AUTHENTICATE_TOKEN": token})  # never in its arguments
    assert "rows 3" in repl.run("print('rows', spark.range(3).count())")
    local.stop(grace=10)
    again = run_sparkscope("server", "start", "--port", str(port),
                           env={**env, "SPARK_CONNECT_AUTHENTICATE_TOKEN": token})
    assert again.returncode == 0, again.stderr
    hint = ("Run :connect to open a new session; :restart --lost brings back the queries sparkscope started from their "
            "checkpoints.")
    said = f"error: The server at {url} restarted or dropped this session: its queries ended with it. {hint}"
    # until the old connection's reconnect wait ends, the call cannot reach the new server: that is said too
    waiting = (f"error: The server at {url} did not answer this session, yet answers a new connection: it restarted "
               f"(its queries ended with it), or the network dropped this session's connection. {hint}")

    def told_restarted() -> bool:
        out = " ".join(repl.run("spark.range(3).count()").split())
        assert out in (said, waiting), out
        return out == said

    wait_for(told_restarted, timeout=120, every=0.5, what="the call to reach the restarted server")
    for line in ("spark.range(3).count()", ":queries"):  # pyspark closed the session: each call says why
        assert " ".join(repl.run(line).split()) == said
    repl.run(":connect", timeout=90)
    assert "rows 4" in repl.run("print('rows', spark.range(4).count())")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def test_a_script_whose_server_died_says_its_queries_ended_with_it(own_server, tmp_path):
    """Issue 55 row 14: the script's end used to say "Stopped k9q." of a query that the server's death had ended."""
    import subprocess
    import sys

    local, port, env = own_server
    script = tmp_path / "waits.sps"
    script.write_text(":start k9q ss.source.rate(5)\nprint('started', flush=True)\n"
                      "ss.streams.get('k9q').await_termination()\n")
    waiting = subprocess.Popen([sys.executable, "-m", "sparkscope", "--remote", f"sc://localhost:{port}",
                                "-f", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **env})
    try:
        assert waiting.stdout.readline().startswith("Started k9q") and waiting.stdout.readline() == "started\n"
        os.kill(local.running().pid, signal.SIGKILL)  # the server this module started
        _, err = waiting.communicate(timeout=120)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 1
    assert err.strip().splitlines()[-1].startswith("The server went away (") and err.strip().endswith(
        "): k9q ended with it."), err
    assert "Stopped k9q" not in err
    assert run_sparkscope("server", "start", "--port", str(port), env=env).returncode == 0  # for the tests after


def test_reattach_names_the_session_it_rejoined_and_the_one_another_repl_works_in(own_server):
    """Issue 55 row 49: --reattach while another REPL still works joined an older session without a word."""
    local, port, env = own_server
    url = f"sc://localhost:{port}"
    working, busy = open_repl(url, env)
    assert "Started kept_busy" in busy.run(":start kept_busy ss.source.rate(1)")
    crashed, gone = open_repl(url, env)
    assert "Started left_over" in gone.run(":start left_over ss.source.rate(1)")
    crashed.kill(signal.SIGKILL)
    crashed.close(force=True)
    joined = spawn("--remote", url, "--reattach", env=env)
    again = Repl(joined)
    again.expect(r"Rejoined session [0-9a-f]{8}, where these queries run: left_over\. Session [0-9a-f]{8} is "
                 rf"another sparkscope's \(pid {working.pid}\), left to it\.", timeout=60)  # once connected
    again.prompt()
    again.run(":stop left_over")
    busy.run(":stop kept_busy")
    for child in (joined, working):
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=30)
