"""Habits users bring from the Python REPL, bash and pgcli: exit(), Ctrl-R, a toolbar that is current."""

from __future__ import annotations

import re

import pexpect

from tests.e2e.conftest import Repl, Screen, clean, spawn


def test_exit_asks_about_running_queries_like_quit(remote_url):
    for leave in ("exit()", "quit()"):
        child = spawn("--remote", remote_url)
        repl = Repl(child)
        repl.prompt()
        repl.run(":start leaving ss.source.rate(1)")
        child.send(leave + "\r")
        child.expect(r"1 query is still running \(leaving\)\. Stop it\? \[y/N\]", timeout=30)
        child.send("y\r")
        child.expect(pexpect.EOF, timeout=30)
        assert "Stopped leaving." in clean(child.before)


def test_exit_without_parentheses_says_how_to_leave(repl):
    assert "Use exit(), quit(), :quit or Ctrl-D to leave" in repl.run("exit")


def test_ctrl_r_enter_accepts_the_match(repl):
    assert "'found-it'" in repl.run("'found-' + 'it'")
    assert repl.run("2 + 2").strip().endswith("4")
    repl.child.sendcontrol("r")
    repl.child.send("found-")
    repl.child.expect("found-", timeout=10)
    repl.child.send("\r")  # accepts the match into the line, as in pgcli
    repl.child.send("\r")  # and runs it
    out = repl.prompt()
    assert "'found-it'" in out, out
    assert repl.run("3 + 3").strip().endswith("6")  # no stray search state left behind


def test_the_toolbar_follows_connection_and_failures_without_a_key(remote_url):
    child = spawn("--remote", remote_url, env={"PROMPT_TOOLKIT_NO_CPR": "0"})
    screen = Screen(child, answer_cpr=True)  # prompt-toolkit shows its toolbar once it knows the height
    screen.wait_for(lambda text: re.search(r"session [0-9a-f]{8}\s+queries: 0", text), timeout=60,
                    what="the toolbar to show the session without a key press")
    child.send("bad = ss.source.rate(5).selectExpr(\"raise_error('boom') as x\")\r")
    child.send(":start bad\r")
    screen.wait_for(lambda text: "Started bad" in text, timeout=60)
    screen.wait_for(lambda text: "bad failed" in text, timeout=60, what="the failure alert")
    screen.wait_for(lambda text: re.search(r"session [0-9a-f]{8}\s+queries: 0", text), timeout=30,
                    what="the toolbar to stop counting the failed query")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)
