"""Ctrl-C never stops a stream, and never waits on a stuck server: the REPL in a pty."""

from __future__ import annotations

import re

import pexpect

from sparkscope.core.worker import STILL_RUNNING
from tests.e2e.conftest import Repl, clean, spawn
from tests.netproxy import Proxy


def batch_id(repl: Repl, name: str) -> int:
    out = repl.run(f"ss.streams.get('{name}').progress.batch_id if ss.streams.get('{name}').progress else -1")
    return int(re.findall(r"-?\d+", out)[-1])


def wait_for_more_batches(repl: Repl, name: str, after: int, timeout: float = 90) -> int:
    """Ask the REPL until the query made a batch after `after` (each ask is one round trip through the
    REPL; no sleeping). A deadline, not a number of asks: a first batch takes many round trips while the other
    test worker keeps the cores busy."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = batch_id(repl, name)
        if now > after:
            return now
    raise AssertionError(f"{name} made no batch after {after} within {timeout:g} s")


LONG_COMMANDS = [
    (":await kept", "Cancelled: the operation was interrupted; streaming queries keep running."),
    (":tail kept --follow", "Stopped tailing kept"),
    (":sql select count(*) from range(1000000000000)", "Cancelled"),
    ("spark.range(1000000000000).count()", "KeyboardInterrupt: the cell stopped; streaming queries keep running."),
]


def test_ctrl_c_in_a_long_command_leaves_the_query_running(repl):
    repl.run(":start kept ss.source.rate(5) --trigger 500ms")
    last = wait_for_more_batches(repl, "kept", -1)
    for command, notice in LONG_COMMANDS:
        repl.child.send(command + "\r")
        repl.child.expect(re.escape(STILL_RUNNING), timeout=30)  # the command is under way on the server
        repl.child.sendcontrol("c")
        out = repl.prompt()
        assert notice in out, f"{command}: {out}"
        # an alert ("batch N took longer than its trigger" while the cores were busy) may print too
        assert "True" in repl.run("ss.streams.get('kept').is_active").splitlines(), command
        last = wait_for_more_batches(repl, "kept", last)  # still active, and still making batches
    assert re.search(r"\| kept\s+\| [0-9a-f]{8} \| active", repl.run(":queries"))
    assert repl.run(":stop kept").strip() == "Stopped kept"


def test_a_frozen_network_never_holds_the_prompt(server, sandbox, tmp_path):
    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    config = tmp_path / "sparkscope" / "config.toml"
    config.parent.mkdir()
    # the Ctrl-C below must come between the still-running notice (2 s) and this limit, on a busy machine too
    config.write_text("[repl]\ncommand_timeout = 8\n")
    with Proxy(server.port) as proxy:
        child = spawn("--remote", f"sc://localhost:{proxy.port}",
                      env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": token, "XDG_CONFIG_HOME": str(tmp_path)})
        repl = Repl(child)
        repl.prompt()
        assert "(no queries: start one with :start NAME)" in repl.run(":queries")
        proxy.freeze()
        out = repl.run(":queries", timeout=60)
        assert "error: The command got no answer within 8 s, so it was abandoned." in out
        child.send(":sql select 1\r")
        child.expect(re.escape(STILL_RUNNING), timeout=30)  # stuck on the frozen network
        child.sendcontrol("c")
        out = repl.prompt(timeout=30)
        # the prompt is back at once: the call was either abandoned or interrupted, and the line says so
        assert re.search(r"Cancelled: the (server did not answer, so the call was abandoned|operation was "
                         r"interrupted); streaming queries keep running", out), out
        assert repl.run("6 * 7").strip().endswith("42")  # the prompt is alive while the network is not
        proxy.thaw()
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=60)
        assert "Traceback" not in clean(child.before)


CRASHING_CLIENT = """
import sys, threading, sparkscope
ss = sparkscope.connect(sys.argv[1])
ss.start(ss.source.rate(2), "orphan")
seen = threading.Event()
ss.streams.monitor.subscribe(lambda e: seen.set() if e.kind == "progress" else None)
seen.wait(60)
print(ss.session_id, flush=True)
threading.Event().wait()
"""


def test_reattach_after_a_client_crash_reaches_the_prompt(remote_url):
    """The crashed client's listener stays registered on the server; reattaching used to hang forever."""
    import subprocess
    import sys

    crashed = subprocess.Popen([sys.executable, "-c", CRASHING_CLIENT, remote_url], stdout=subprocess.PIPE, text=True)
    try:
        session_id = crashed.stdout.readline().strip()
        assert re.fullmatch(r"[0-9a-f-]{36}", session_id), session_id
    finally:
        crashed.kill()  # like kill -9: no goodbye to the server
        crashed.wait()
    child = spawn("--remote", remote_url, "--session-id", session_id)
    repl = Repl(child)
    repl.prompt()
    out = repl.run(":queries", timeout=90)
    assert re.search(r"\| orphan\s+\| [0-9a-f]{8} \| active", out), out
    assert repl.run(":stop orphan").strip().endswith("Stopped orphan")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=60)


def test_a_frozen_network_is_said_above_the_prompt_and_so_is_its_end(server, sandbox):
    """Queries run and the network freezes: a note says the numbers are not live (and from when), the
    prompt stays usable, and a second note says when the server answers again. No query stops."""
    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    with Proxy(server.port) as proxy:
        child = spawn("--remote", f"sc://localhost:{proxy.port}", env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": token})
        repl = Repl(child)
        repl.prompt()
        repl.run("ticks = spark.readStream.format('rate').option('rowsPerSecond', 5).load()")
        assert "Started ticks" in repl.run(":start ticks --trigger 5s")
        before = wait_for_more_batches(repl, "ticks", -1)
        proxy.freeze()
        child.expect(r"note: The server is not answering; the numbers shown are from \d\d:\d\d:\d\d, not live",
                     timeout=90)
        assert repl.run("6 * 7").strip().endswith("42")
        proxy.thaw()
        child.expect(re.escape("note: The server answers again; the numbers are live"), timeout=90)
        wait_for_more_batches(repl, "ticks", before)
        assert "Stopped ticks" in repl.run(":stop ticks")
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=60)
        assert "Traceback" not in clean(child.before)


def test_ctrl_c_on_a_job_spark_cannot_interrupt_says_what_still_runs_and_how_to_end_it(tmp_path):
    """A sort's top-N (TakeOrderedAndProjectExec) never checks its task's kill flag: after the cancel, its tasks
    run on to the end of their partitions. The REPL says so within seconds, and :session shows them. On a server
    of its own, stopped at the end: those tasks would otherwise keep two cores busy for hours."""
    from sparkscope.server.ports import free_port
    from sparkscope.client.processes import busy_threads
    from sparkscope.server.local import LocalServer
    from tests.helpers import run_sparkscope, wait_for

    env = {"XDG_STATE_HOME": str(tmp_path)}
    local = LocalServer(tmp_path / "sparkscope")
    port = free_port()
    try:
        started = run_sparkscope("server", "start", "--port", str(port), env=env)
        assert started.returncode == 0, started.stderr
        pid = local.running().pid
        repl = Repl(spawn("--remote", f"sc://localhost:{port}", env=env))
        repl.prompt()
        assert "none computing" in repl.run(":session")
        repl.child.send(":sql SELECT id FROM range(100000000000) ORDER BY id DESC\r")
        wait_for(lambda: busy_threads(pid, window=0.5), 120, what="the sort's tasks to compute")
        repl.child.sendcontrol("c")
        repl.expect(r"Cancelled", timeout=30)
        out = repl.expect(r"sparkscope server start --restore \(queries resume from their checkpoints\)", timeout=30)
        assert re.search(r"note: Spark did not stop \d+ tasks? of the cancelled command: \d\.\d cores? stay busy "
                         r"until (each|it) reaches the end of its partition", out.replace("\r\n", " ")), out
        # :session samples the tasks' CPU for half a second: on a busy machine one sample may find them waiting
        wait_for(lambda: re.search(r"\| tasks\s+\| \d+ computing, \d\.\d cores? busy", repl.run(":session")), 60,
                 what=":session showing the tasks that still compute")
    finally:
        local.stop(grace=10)
