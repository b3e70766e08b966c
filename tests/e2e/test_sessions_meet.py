"""Two REPLs of this machine on one server, each in its own session, meeting over one catalogued query: what
each says must be what the server runs. Restarts typed at the same moment, a stop of the other's query, the
rows it kept, a forget while it runs elsewhere, --reattach beside a live REPL, a checkpoint deleted by hand."""

from __future__ import annotations

import re
import shutil

import pexpect
import pytest

from sparkscope.client.catalog.records import Catalog
from tests.e2e.conftest import Repl, clean, spawn
from tests.helpers import run_sparkscope, wait_for

pytestmark = pytest.mark.slow

NAME = "meet_same"


def open_repl(url: str) -> Repl:
    shell = Repl(spawn("--remote", url))
    shell.prompt()
    return shell


def leave(shell: Repl) -> None:
    shell.child.sendcontrol("d")
    if shell.child.expect([r"Stop (it|them)\? \[y/N\]", pexpect.EOF], timeout=30) == 0:
        shell.child.send("y\r")
        shell.child.expect(pexpect.EOF, timeout=30)


def session_id(shell: Repl) -> str:
    return re.search(r"session id\s+\|\s+(\S+)", shell.run(":session")).group(1)


def kept_rows(shell: Repl, name: str = NAME) -> int:
    match = re.search(r"\((\d+) rows?", shell.run(f":peek {name} 5"))
    return int(match.group(1)) if match else 0


def test_two_repls_meeting_over_one_query_each_say_what_the_server_runs(remote_url, sandbox, tmp_path, monkeypatch):
    # a state dir of its own: --reattach below must meet only these two REPLs' sessions, not another test's (the
    # server's token, which its state dir held, comes from the environment)
    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", token)
    a, b = open_repl(remote_url), open_repl(remote_url)
    try:
        a_session, b_pid = session_id(a), b.child.pid
        # bounded sinks started at the same moment from two REPLs: each Python worker connects back, both run
        a.child.send(":start meet_a ss.source.rate(5)\r")
        b.child.send(":start meet_b ss.source.rate(5)\r")
        assert "Started meet_a" in a.prompt(120) and "Started meet_b" in b.prompt(120)
        for shell, name in ((a, "meet_a"), (b, "meet_b")):
            wait_for(lambda s=shell, n=name: kept_rows(s, n) > 0, 90, every=0.5, what=f"{name}'s first rows")
            assert shell.run(f":stop {name}").strip() == f"Stopped {name}"
        assert f"Started {NAME}" in a.run(f":start {NAME} ss.source.rate(5)")
        wait_for(lambda: kept_rows(a) > 0, 90, every=0.5, what="its first rows")
        assert a.run(f":stop {NAME}").strip() == f"Stopped {NAME}"

        # both type :restart at the same moment: one restarts it, the other says where it runs now
        a.child.send(f":restart {NAME}\r")
        b.child.send(f":restart {NAME}\r")
        outs = [a.prompt(120), b.prompt(120)]
        restarted = [out for out in outs if f"Restarted {NAME}" in out]
        refused = [out for out in outs if "is running in another session" in out]
        assert len(restarted) == 1 and len(refused) == 1, outs
        assert re.search(rf"Restarted {NAME} \(id [0-9a-f]{{8}}\) from its checkpoint \(after batch \d+\)",
                         restarted[0]), restarted[0]
        runner, other = (a, b) if restarted[0] is outs[0] else (b, a)
        assert re.search(rf"\| {NAME}\s+\| [0-9a-f]{{8}} \| active", runner.run(":queries")), "the winner's run ended"

        # the other REPL stops it there; it says who works in that session, and the runner keeps its rows
        runner_pid = runner.child.pid
        wait_for(lambda: kept_rows(runner) > 0, 90, every=0.5, what="the restarted run's first rows")
        out = other.run(f":stop {NAME}").strip()
        assert re.fullmatch(rf"Stopped {NAME} in session [0-9a-f]{{8}}, where another sparkscope \(pid "
                            rf"{runner_pid}\) works", out), out
        wait_for(lambda: re.search(rf"\| {NAME}\s+\| [0-9a-f]{{8}} \| stopped", runner.run(":queries")), 30,
                 every=0.5, what="the runner to see its query stopped")
        out = runner.run(f":peek {NAME} 5")
        assert re.search(r"\(\d+ rows?", out), f"a stop from another session dropped the rows the runner kept:\n{out}"

        # running in B: A cannot forget it, and a stop typed in A (which still has its own old run) stops B's
        assert f"Restarted {NAME}" in b.run(f":restart {NAME}")
        out = a.run(f":forget {NAME} --yes").strip()
        assert out == (f"error: {NAME} is running in session {session_id(b)[:8]}, where another sparkscope (pid "
                       f"{b_pid}) works: forgetting it would leave a query nobody can restart. Stop it first: "
                       f":stop {NAME}."), out
        out = run_sparkscope("--remote", remote_url, "--reattach", "-c", ":queries",
                             env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": token})
        assert out.returncode != 0
        assert re.search(r"error: No session on \S+ was left by this client: session \S+ is in use by another "
                         r"sparkscope \(pid \d+\)\. Join it anyway with --session-id \S+", out.stderr), out.stderr
        assert re.search(rf"\| {NAME}\s+\| [0-9a-f]{{8}} \| active", b.run(":queries")), "--reattach touched B"
        out = a.run(f":stop {NAME}").strip()
        assert out == f"Stopped {NAME} in session {session_id(b)[:8]}, where another sparkscope (pid {b_pid}) works"

        # its checkpoint deleted by hand: the restart says it starts over, as Spark then does
        record = next(r for r in Catalog().records() if r.name == NAME)
        shutil.rmtree(record.checkpoint.removeprefix("file:"))
        out = a.run(f":restart {NAME}")
        assert re.search(rf"Restarted {NAME} \(id [0-9a-f]{{8}}\) from batch 0 with empty state: its checkpoint "
                         rf"{re.escape(record.checkpoint)} held no committed batch \(deleted\?\)", clean(out)), out
        assert a_session == session_id(a)
        a.run(f":stop {NAME}")
    finally:
        leave(a)
        leave(b)


def test_a_second_repl_peeks_a_query_of_another_session_and_is_told_where_its_table_and_tail_are(remote_url):
    """Issue 55 row 13: a second REPL's `spark.table('qa')` and `:tail qa` said "not found" without a word of the
    session the query runs in. Its rows are read from any session of the user (:peek); its name and view are Spark's
    per session."""
    a, b = open_repl(remote_url), open_repl(remote_url)
    try:
        assert "Started qa_rows" in a.run(":start qa_rows ss.source.rate(10)")
        owner = session_id(a)
        wait_for(lambda: kept_rows(b, "qa_rows") >= 1, timeout=60, what="qa_rows's rows in the second REPL")
        hint = f":peek qa_rows reads its rows here; :connect {remote_url} --session-id {owner} joins the session it runs in"
        table = b.run("spark.table('qa_rows').count()")
        assert table.strip() == (f"error: qa_rows is a query of another session ({owner[:8]}, started by "
                                 f"{a.run('import getpass; print(getpass.getuser())').strip()}); its name and its "
                                 f"table are that session's. {hint}."), table
        tail = b.run(":tail qa_rows")
        assert tail.strip().startswith("error: qa_rows is a query of another session") and hint in tail, tail
        assert "Stopped qa_rows" in a.run(":stop qa_rows")
        gone = b.run(":tail qa_rows")  # stopped: the catalog no longer says it runs elsewhere
        assert gone.strip().startswith("error: No query named 'qa_rows'"), gone
    finally:
        leave(a)
        leave(b)
