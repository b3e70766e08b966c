"""The quick-start path in a real terminal: define streams, :start, :queries, :progress, :peek, :stop."""

from __future__ import annotations

import re
import shlex
import time

import pexpect
import pytest

from sparkscope.core.worker import STILL_RUNNING
from tests.helpers import sparkscope_bin, wait_for
from tests.e2e.conftest import Repl, Screen, clean, spawn


def wait_for_rows(repl: Repl, command: str, pattern: str, tries: int = 40) -> str:
    for _ in range(tries):
        out = repl.run(command)
        if re.search(pattern, out):
            return out
        time.sleep(0.5)
    raise AssertionError(f"{command!r} never showed {pattern!r}; last output:\n{out}")


def test_quick_start_session(repl, data_dir):
    (data_dir / "e.json").write_text('{"action": "Open"}\n{"action": "Close"}\n{"action": "Open"}\n')
    out = repl.run("events = spark.readStream.schema('action STRING').json('%s')" % data_dir)
    assert "error" not in out
    out = repl.run("events")
    assert "streaming DataFrame[action: string]" in out
    repl.run("actions = events.groupBy('action').count()")
    out = repl.run(":start actions")
    assert re.search(r"Started actions \(id [0-9a-f]{8}\) → memory sink, complete mode, trigger default", out)
    repl.run("ticks = ss.source.rate(20)")
    out = repl.run(":start counts ticks.groupBy((ticks.value % 2).alias('parity')).count()")
    assert "Started counts" in out
    out = repl.run(":queries")
    assert re.search(r"\| actions\s+\| [0-9a-f]{8} \| active", out)
    assert re.search(r"\| counts\s+\| [0-9a-f]{8} \| active", out)
    repl.run(":await actions --all-available")
    out = repl.run(":peek actions --order action")
    assert re.search(r"\| Close\s+\| 1\s+\|", out) and re.search(r"\| Open\s+\| 2\s+\|", out)
    assert "(2 rows)" in out
    out = wait_for_rows(repl, ":progress counts", r"\| counts\s+\| \d+")
    assert "input/s" in out and "watermark" in out
    out = repl.run(":peek actions --vertical")
    assert "-[ RECORD 1 ]" in out and re.search(r"action \| (Open|Close)", out)
    out = repl.run(":stop counts")
    assert "Stopped counts" in out
    out = repl.run(":queries")
    assert re.search(r"\| counts\s+\| [0-9a-f]{8} \| stopped", out)


def test_multiline_python_and_completion(repl):
    repl.child.send("def double(x):\r")
    repl.expect(r"\.\.\.")
    repl.child.send("return x * 2\r")
    repl.child.send("\r")
    repl.child.expect("\r\r\n")
    repl.prompt()
    out = repl.run("double(21)")
    assert "42" in out
    repl.run("r = ss.source.rate(1)")
    repl.run(":start tickquery r")
    # what the terminal shows, not the byte stream: a redraw may write `tickq` and `uery` apart (seen on a loaded
    # machine), which a pattern on the raw output never matches
    repl.child.send(":peek tickq\t")
    screen = Screen(repl.child)
    screen.wait_for(lambda text: ":peek tickquery" in text, what="the completed name in the line")
    out = repl.run("")
    assert "timestamp" in out and "value" in out
    repl.child.send(":sta\t")
    screen = Screen(repl.child)
    screen.wait_for(lambda text: ":start" in text and ":status" in text, what="both commands offered")
    repl.child.sendcontrol("c")
    repl.child.send("\r")
    repl.prompt()


def interrupt_a_long_sql(repl: Repl) -> str:
    """Start a SQL job that runs for hours, press Ctrl-C once it runs on the server; what was printed."""
    repl.child.send(":sql SELECT count(*) FROM range(0, 500000000000) a\r")
    repl.expect(re.escape(STILL_RUNNING))  # the job runs on the server now
    repl.child.sendcontrol("c")
    return repl.prompt()


# What Ctrl-C in a long SQL says: the server interrupted the operation, or (on a busy machine, where the server does
# not answer the interrupt within its wait) the call was abandoned. Both are true answers, and both say the streams
# run on; the prompt comes back either way.
CANCELLED = re.compile(r"Cancelled: (the operation was interrupted; streaming queries keep running\.|the server did "
                       r"not answer, so the call was abandoned; streaming queries keep running on the server\.)")


def test_ctrl_c_cancels_a_long_sql_but_not_the_streaming_query(repl):
    repl.run(":start keeps ss.source.rate(5)")
    out = interrupt_a_long_sql(repl)
    assert CANCELLED.search(out), out
    first = _batch_of_keeps(repl)
    wait_for(lambda: _batch_of_keeps(repl) > first, timeout=60, what="keeps making batches after the Ctrl-C")


def _batch_of_keeps(repl: Repl) -> int:
    """The batch :queries shows for `keeps`, which must be active."""
    row = next(line for line in repl.run(":queries").splitlines() if line.startswith("| keeps "))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[2] == "active", row  # name, id, state, sink, mode, trigger, batch, …
    return int(cells[6]) if cells[6].isdigit() else -1


def test_ctrl_c_cancels_also_when_the_repl_was_started_with_sigint_ignored(remote_url):
    """A shell without job control starts a background command with SIGINT ignored (`cmd &` in a
    script), and Python keeps that: Ctrl-C then did nothing while a command ran."""
    import signal

    child = spawn("--remote", remote_url, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    repl = Repl(child)
    repl.prompt()
    out = interrupt_a_long_sql(repl)
    assert CANCELLED.search(out), out
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def quit_with_a_running_query(remote_url: str, name: str, answer: str) -> str:
    """Start a query, press Ctrl-D, answer the stop question; what was printed until the exit."""
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    repl.run(f":start {name} ss.source.rate(1)")
    child.sendcontrol("d")
    child.expect(rf"1 query is still running \({name}\)\. Stop it\? \[y/N\]", timeout=30)
    child.send(answer + "\r")
    child.expect(pexpect.EOF, timeout=30)
    return clean(child.before)


def test_ctrl_d_with_running_queries_stop_them(remote_url):
    assert "Stopped bye." in quit_with_a_running_query(remote_url, "bye", "y")


def test_ctrl_d_with_running_queries_leave_them_and_reattach(remote_url):
    text = quit_with_a_running_query(remote_url, "stays", "n")
    match = re.search(r"Reattach with: (.+ --remote \S+ --session-id [0-9a-f-]{36})\s*$", text, re.M)
    assert match, text
    argv = shlex.split(match.group(1))  # works as printed: sparkscope is not on PATH here, so its full path
    assert argv[0] == sparkscope_bin()
    again = spawn(*argv[1:])
    repl2 = Repl(again)
    repl2.prompt()
    out = repl2.run(":queries")
    assert re.search(r"\| stays\s+\| [0-9a-f]{8} \| active", out)
    out = repl2.run(":stop stays")
    assert "Stopped stays" in out
    again.sendcontrol("d")
    again.expect(pexpect.EOF, timeout=30)


def test_queries_right_after_start_shows_the_batch_that_progress_shows(repl):
    """The first screen: before the listener has reported, :queries read nothing and showed batch '-' and
    0.0 rows/s while :progress showed batch 7. It reads the query's last progress once instead."""
    assert "Started early" in repl.run(":start early ss.source.rate(50) --trigger 200ms")
    deadline = time.monotonic() + 60
    batch = -1
    while batch < 2 and time.monotonic() < deadline:  # poll :progress until the query has run batches
        match = re.search(r"\|\s*early\s*\|\s*(\d+)\s*\|", repl.run(":progress early"))
        batch = int(match.group(1)) if match else -1
    assert batch >= 2
    listed = repl.run(":queries")
    row = re.search(r"\|\s*early\s*\|[^\n]*\|\s*active\s*\|[^\n]*?\|\s*(\d+|-)\s*\|\s*([\d.,]+)\s*\|", listed)
    assert row and row.group(1) != "-" and int(row.group(1)) >= batch, listed
    repl.run(":stop early")



def test_a_query_left_running_at_ctrl_d_is_stopped_by_name_from_a_new_session(remote_url):
    text = quit_with_a_running_query(remote_url, "orphan", "n")
    old = re.search(r"--session-id ([0-9a-f]{8})", text).group(1)
    repl2 = Repl(spawn("--remote", remote_url))  # not reattached: a new session
    repl2.prompt()
    assert f"Stopped orphan in session {old}, where it was left running" in repl2.run(":stop orphan")
    assert re.search(r"\|\s*orphan\s*\|\s*\w+\s*\|\s*stopped\s*\|", repl2.run(":queries --all"))
    repl2.child.sendcontrol("d")
    repl2.child.expect(pexpect.EOF, timeout=30)

@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_garbage_collection_is_back_on_once_the_prompt_is_drawn(remote_url, term):
    """Start-up pauses Python's cyclic collector until the first draw. Left off, every reference cycle of
    a long session would live forever (as pyspark's own gc switch once did: 60 MB a minute)."""
    child = spawn("--remote", remote_url, env={"TERM": term})
    child.send("import gc; ['gc-on', gc.isenabled()]\r")
    child.expect(r"\['gc-on', (True|False)\]", timeout=60)
    assert child.match.group(1) == "True"
    child.send(":quit\r")
    child.expect(pexpect.EOF, timeout=30)


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_ctrl_c_stops_a_python_cell_and_nothing_of_it_runs_behind_the_prompt(remote_url, term):
    """As in Python's REPL: a CPU-bound cell ends with KeyboardInterrupt, and a cell blocked in a sleep runs no
    further line once the sleep returns (the cell runs in a worker thread, where SIGINT never lands)."""
    child = spawn("--remote", remote_url, env={"TERM": term})
    repl = Repl(child)
    try:
        repl.prompt()
        repl.run("n = 0")
        child.send("while True: n += 1\r\r")  # a block ends with a blank line, as in python
        repl.expect(r"\(still running; Ctrl-C")
        child.sendcontrol("c")
        out = repl.prompt()
        assert "KeyboardInterrupt: the cell stopped; streaming queries keep running." in out, out
        first = int(repl.run("n").strip().splitlines()[-1])
        assert first > 0 and int(repl.run("n").strip().splitlines()[-1]) == first  # it no longer grows

        repl.run("import threading, time")
        child.send("time.sleep(3); done = 1\r")
        repl.expect(r"\(still running; Ctrl-C")
        child.sendcontrol("c")
        out = repl.prompt()
        assert "KeyboardInterrupt: the cell is blocked in a call that Ctrl-C cannot interrupt (a sleep, a read); it " \
               "stops when that call returns, and nothing after it runs." in out, out
        # the fact to wait for: the blocked cell's thread has ended (this line runs in a thread of that name too)
        counting = "sum(t.name == 'sparkscope-command' and t.is_alive() for t in threading.enumerate())"
        wait_for(lambda: repl.run(counting).strip().splitlines()[-1] == "1", timeout=60, every=0.2,
                 what="the sleeping cell's thread to end")
        assert repl.run("'done' in dir()").strip().splitlines()[-1] == "False"
    finally:
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=30)


def test_a_bracketed_paste_of_python_and_a_command_runs_each_line(repl):
    """Issue 55 row 21: the paste arrived as one input and was compiled as Python: a SyntaxError, and nothing ran."""
    repl.child.send("\x1b[200~x = 1\r:start pasted ss.source.rate(1)\ry = x + 1\x1b[201~\r")
    out = repl.prompt()
    assert "Started pasted " in out and "SyntaxError" not in out, out
    assert repl.run("print('y is', y)").strip().endswith("y is 2")
    repl.run(":stop pasted")


def test_kept_lists_a_bounded_query_s_rows_as_yours_and_free_lets_go_of_them_once_it_stopped(repl):
    assert "Started held" in repl.run(":start held ss.source.rate(20) --keep 30")
    wait_for(lambda: "(30 rows)" in repl.run(":peek held 30"), timeout=60, what="30 rows kept")
    listed = repl.run(":kept")
    row = next((line for line in listed.splitlines() if "held" in line), "")
    assert re.search(r"\| +you +\|", row) and "its query runs" in row and re.search(r"\| +30 +\|", row), listed
    running = repl.run(":kept --free")  # frees only what nothing uses: held's query still runs
    assert "held" not in running, running
    assert "Stopped held" in repl.run(":stop held")
    freed = repl.run(":kept --free")
    assert re.search(r"\| ring +\| held +\| you ", freed) and "Freed " in freed, freed
    assert "held" not in repl.run(":kept")
