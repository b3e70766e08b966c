"""Habits users bring from the Python REPL, bash and pgcli: exit(), Ctrl-R, a toolbar that is current."""

from __future__ import annotations

import contextlib
import re
import socket

import pexpect
import pytest

from tests.e2e.conftest import Repl, Screen, clean, spawn


def test_exit_asks_about_running_queries_like_quit(remote_url):
    for leave in ("exit()", "quit()"):
        child = spawn("--remote", remote_url)
        repl = Repl(child)
        repl.prompt()
        started = repl.run(":start leaving ss.source.rate(1)")
        assert "Started leaving" in started, started  # else there is nothing to ask about
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


@contextlib.contextmanager
def port_15002_taken():
    """Port 15002 held by another program (the user's own server may hold it already: then it stays so)."""
    holder = socket.socket()
    try:
        with contextlib.suppress(OSError):
            holder.bind(("127.0.0.1", 15002))
            holder.listen()
        yield
    finally:
        holder.close()


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_a_cold_start_draws_the_prompt_at_once_and_notices_above_it(tmp_path, term):
    """The very first start: the server must be started and 15002 is taken. The prompt shows without a key
    (once a notice printed onto its line hid it until a key redrew it), the notice on a line of its own
    above it; on xterm the toolbar says how the start goes."""
    from sparkscope.server.local import LocalServer

    with port_15002_taken():
        child = spawn(env={"PROMPT_TOOLKIT_NO_CPR": "0", "XDG_STATE_HOME": str(tmp_path), "TERM": term})
        try:
            screen = Screen(child, answer_cpr=True)
            if term == "xterm":
                screen.wait_for(lambda text: re.search(r"connecting… \(Spark server: starting (Java|the Spark "
                                                       r"session), \d+ s\)", text), timeout=60,
                                what="the start-up stage")
            screen.wait_for(lambda text: re.search(r"^notice: Port 15002 is taken by another program or server; the "
                                                   r"embedded server uses port \d+ \(sparkscope --port N picks "
                                                   r"one\)\nsparkscope>", text, re.M),
                            timeout=60, what="the notice on a line of its own, the prompt below it, without a key")
            if term == "xterm":
                screen.wait_for(lambda text: re.search(r"session [0-9a-f]{8}\s+queries: 0", text), timeout=120,
                                what="the toolbar to show the session once the server is up")
            repl = Repl(child)
            child.send("'@sync' + '0@'\r")
            assert "'@sync0@'" in repl.expect(re.escape("'@sync0@'"), timeout=120)
            child.send(":quit\r")
            child.expect(pexpect.EOF, timeout=60)
        finally:
            LocalServer(tmp_path / "sparkscope").stop(grace=10)


def test_tables_fit_an_80_column_terminal(remote_url):
    child = spawn("--remote", remote_url, cols=80)
    repl = Repl(child)
    repl.prompt()
    repl.run(":start narrow ss.source.rate(5)")
    out = repl.run(":queries")
    lines = [line for line in out.splitlines() if line.strip()]
    assert all(len(line) <= 80 for line in lines), out
    header = next(line for line in lines if "name" in line)
    assert all(f" {word} " in header for word in ("name", "state", "batch", "input/s", "processed/s")), header
    assert " id " not in header  # the least useful column gave way, so the others show whole
    assert re.search(r"\| narrow\s+\| active", out)
    wait_progress = repl.run(":progress narrow")
    assert all(len(line) <= 80 for line in wait_progress.splitlines()), wait_progress
    wide = repl.run(":sql select 1 a,2 b,3 c,4 d,5 e,6 f,7 g,8 h,9 i,10 j")  # short: typed lines must not wrap
    assert "-[ RECORD 1 ]" in wide  # too many columns for 80: one record at a time, like pgcli's auto_expand
    assert all(len(line) <= 80 for line in wide.splitlines())
    repl.run(":stop narrow")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def test_long_output_goes_through_the_pager_when_there_is_one(remote_url):
    child = spawn("--remote", remote_url, env={"PAGER": "less -SRXF"})
    repl = Repl(child)
    repl.prompt()
    child.send(":sql select id from range(100)\r")
    child.expect(r"\| 30 +\|", timeout=60)  # the first screen, and less waits: rows 50 and on are not shown
    assert "| 50 " not in child.before
    child.send("G")  # less: to the end
    child.expect(r"\(END\)", timeout=30)
    child.send("q")
    repl.prompt()
    assert repl.run("1 + 1").strip().endswith("2")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def test_without_a_pager_long_output_is_printed_whole(repl):
    out = repl.run(":sql select id from range(100)")
    assert "| 99 " in out and "(100 rows)" in out


def test_sql_says_when_it_shows_only_the_first_rows(repl):
    out = repl.run(":sql select id from range(1001)")
    assert "(first 1,000 rows; --limit N for more)" in out and "| 999 " in out and "| 1000 " not in out
    out = repl.run(":sql select id from range(1001) --limit 5")
    assert "(first 5 rows; --limit N for more)" in out
    assert "(3 rows)" in repl.run(":sql select id from range(3) --limit 5")


VI_KEYS = "1 + 1\x1bxA5\r"  # vi: Esc, x deletes the last 1, A appends 5: "1 + 5"


def test_vi_mode_from_the_config_and_from_set(remote_url, tmp_path):
    config = tmp_path / "sparkscope" / "config.toml"
    config.parent.mkdir()
    config.write_text("[repl]\nvi = true\n")
    child = spawn("--remote", remote_url, env={"XDG_CONFIG_HOME": str(tmp_path)})
    repl = Repl(child)
    repl.prompt()
    child.send(VI_KEYS)
    assert repl.prompt().strip().endswith("6")
    assert repl.run(":set vi off").strip() == "vi key bindings are off"
    assert repl.run(":set").strip() == "vi = off"
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def test_set_vi_on_switches_the_keys(repl):
    assert repl.run(":set vi on").strip() == "vi key bindings are on"
    repl.child.send(VI_KEYS)
    assert repl.prompt().strip().endswith("6")


def test_ctrl_x_ctrl_e_edits_the_line_in_the_editor(remote_url, tmp_path):
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'w').write('6 * 7\\n')\n")
    import sys

    child = spawn("--remote", remote_url, env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": ""})
    repl = Repl(child)
    repl.prompt()
    child.send("1 + ")
    child.sendcontrol("x")
    child.sendcontrol("e")  # the editor replaces "1 + " with "6 * 7", and the line runs
    child.expect(r"(?<![\d.])42\r\n", timeout=30)
    repl.prompt()
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def test_help_keys_lists_the_bindings(repl):
    out = repl.run(":help keys")
    for key in ("Ctrl-R", "Ctrl-X Ctrl-E", "Ctrl-C", "Ctrl-D", "vi"):
        assert key in out


def test_leaving_says_the_embedded_server_stays_and_how_to_stop_it(remote_url, server):
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    assert "(no queries" in repl.run(":queries")  # connected
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)
    text = clean(child.before)
    match = re.search(rf"The embedded Spark Connect server keeps running \(pid {server.pid}, [\d.]+ (MiB|GiB)\); "
                      r"stop it with: (\S+) server stop", text)
    assert match, text
    assert match.group(2).endswith("sparkscope")


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_ctrl_d_typed_while_a_command_runs_leaves_after_it(remote_url, term, tmp_path):
    """As in Python's REPL. Between prompts the terminal is in canonical mode, where Ctrl-D is an end of
    file and not a byte: prompt-toolkit's raw read never saw it, so the REPL stayed."""
    import os

    from tests.helpers import wait_for

    go = tmp_path / "go"
    os.mkfifo(go)  # the command runs until the test writes to it
    child = spawn("--remote", remote_url, env={"TERM": term})
    repl = Repl(child)
    repl.prompt()
    child.send(f"print('wai' + 'ting'); open({str(go)!r}).read(); print('do' + 'ne')\r")
    child.expect("waiting", timeout=30)  # the command runs, the prompt has let go of the terminal
    child.sendcontrol("d")
    writer = wait_for(lambda: _open_for_writing(go), timeout=30, what="the command to read the fifo")
    os.write(writer, b"go")
    os.close(writer)
    child.expect("done", timeout=30)
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_ctrl_d_typed_the_moment_a_command_ends_leaves(remote_url, term):
    """Between the command's end and the next prompt's raw mode there is no moment where it is lost."""
    child = spawn("--remote", remote_url, env={"TERM": term})
    child.delaybeforesend = None
    repl = Repl(child)
    repl.prompt()
    child.send("print('fini' + 'shed')\r")
    child.expect("finished", timeout=30)
    child.sendcontrol("d")  # at once: while the REPL goes from the command back to its prompt
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 0


def _open_for_writing(fifo) -> int | None:
    """A writer's end of `fifo` once a reader has it open (None before)."""
    import os

    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: nobody reads it yet
        return None
