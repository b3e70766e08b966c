"""pyspark's own Structured Streaming examples, run as their usage line says (`spark-submit FILE HOST PORT`), through
`sparkscope FILE HOST PORT` in a terminal. Nobody here wrote them: they are read from the installed pyspark wheel
(pyspark/examples/src/main/python/sql/streaming/) at test time, never copied into this repository.

Their data comes from a socket, as the guide's `nc -lk 9999` gives it. The test types one line, waits for the batch
that counts it, types the next; then presses Ctrl-C in `awaitTermination()`, as a person ends the example.

On Spark Connect, plain pyspark prints these console sinks on the server's stdout, not in the terminal that ran the
script; sparkscope prints them where the script runs, which is what spark-submit shows."""

from __future__ import annotations

import re
from pathlib import Path

import pexpect
import pytest

from tests.e2e.conftest import clean, spawn
from tests.helpers import LineServer

EXAMPLES = Path(__import__("pyspark").__file__).parent / "examples" / "src" / "main" / "python" / "sql" / "streaming"


@pytest.fixture
def lines():
    server = LineServer()
    yield server
    server.close()


def _example(name: str) -> str:
    path = EXAMPLES / name
    if not path.exists():
        pytest.skip(f"this pyspark wheel ships no {name}")
    return str(path)


def _until(child: pexpect.spawn, pattern: str, timeout: float = 90) -> str:
    """The output up to the first batch that matches `pattern` (a batch is printed whole, then the next starts)."""
    child.expect(pattern, timeout=timeout)
    return clean(child.before + child.after)


def _ctrl_c_ends_it(child: pexpect.spawn) -> str:
    """Ctrl-C in awaitTermination() ends the script, as it ends `python FILE`; its exit stops its query."""
    child.sendcontrol("c")
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    assert child.exitstatus == 130
    return clean(child.before)


def test_structured_network_wordcount_prints_the_running_counts_of_each_batch(remote_url, lines):
    child = spawn("--remote", remote_url, _example("structured_network_wordcount.py"), "127.0.0.1", str(lines.port))
    lines.send("apache spark")
    first = _until(child, r"\| apache +\| 1 +\|[\s\S]*?rows in the result\)")
    assert re.search(r"\| spark +\| 1 +\|", first), first
    lines.send("apache hadoop")
    second = _until(child, r"\| apache +\| 2 +\|[\s\S]*?rows in the result\)")
    assert re.search(r"\| hadoop +\| 1 +\|", second) and re.search(r"\| spark +\| 1 +\|", second), second
    assert "| word" in first  # the example's own column names
    ended = _ctrl_c_ends_it(child)
    assert "KeyboardInterrupt: the script stopped while waiting for console_1." in ended, ended
    assert "Stopped console_1." in ended, ended
    assert "keeps running" not in ended and "Traceback" not in ended, ended


def test_structured_network_wordcount_windowed_prints_whole_windows_in_order(remote_url, lines):
    child = spawn("--remote", remote_url, _example("structured_network_wordcount_windowed.py"),
                  "127.0.0.1", str(lines.port), "10", "5")
    lines.send("apache spark apache")
    table = _until(child, r"\| apache +\| 2 +\|[\s\S]*?rows in the result\)")
    windows = re.findall(r"\{(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d), (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\}", table)
    # a word falls into two 10-second windows sliding by 5, so each word shows twice; truncate=false shows whole
    # window values, and orderBy('window') sorts them
    assert len(windows) == 4 and windows == sorted(windows), table
    assert len(re.findall(r"\| apache +\| 2 +\|", table)) == 2, table
    assert len(re.findall(r"\| spark +\| 1 +\|", table)) == 2, table
    assert "…" not in table, table
    _ctrl_c_ends_it(child)


def test_structured_sessionization_fails_as_spark_fails_it(remote_url, lines):
    """The example asks for update mode, which Spark 3.2+ refuses for session windows (the guide says so too): the
    script stops at start(), with Spark's own message, a traceback naming the example's line, and exit code 1."""
    example = _example("structured_sessionization.py")
    child = spawn("--remote", remote_url, example, "127.0.0.1", str(lines.port))
    child.expect(pexpect.EOF, timeout=90)
    child.close()
    out = clean(child.before)
    assert child.exitstatus == 1, out
    assert re.search(rf'File "{re.escape(example)}", line \d+, in <module>', out), out
    assert "Invalid streaming output mode: update" in out and "session window" in out, out
    assert not lines.connected.is_set()  # nothing ran


def test_structured_blockchain_admission_control_reads_twenty_blocks_a_batch(remote_url):
    """A Python data source with admission control (ReadMaxRows(20)), its query stopped after 30 s of the
    example's own sleep, then spark.stop(): exit 0, and nothing after the example's last line, as pyspark."""
    child = spawn("--remote", remote_url, _example("structured_blockchain_admission_control.py"))
    child.expect(pexpect.EOF, timeout=120)
    child.close()
    out = clean(child.before)
    assert child.exitstatus == 0, out
    first = out.split("Batch: 0 (admission_control_test)")[1].split("Batch: 1")[0]
    assert re.findall(r"^\| (\d+) +\|", first, re.M) == [str(block) for block in range(20)], first
    footers = re.findall(r"^\((\d+) new rows\)$", out, re.M)
    assert len(footers) >= 2 and set(footers) == {"20"}, out  # each batch: the read limit's 20 blocks
    assert out.rstrip().endswith("=" * 70), out[-500:]  # spark.stop() adds no line of its own
