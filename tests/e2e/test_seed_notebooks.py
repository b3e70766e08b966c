"""The seeds as the notebooks they are: each seed's cells (the ones its notebook ran, In [N]), in order, made into a
.ipynb with `%load_ext sparkscope` first, and run headless by nbclient in a real kernel against the test server, with
the same data as the REPL's corpus tests (tests/seeds.py).

What a person waits for by eye before the next cell (a query has processed its input) is a cell of the test's,
marked `# (the test's)`: never the seed's. A display() of a stream is interrupted once it showed a batch, as a person
moves on. What cannot run here fails as it fails pasted in the REPL (e2e/test_corpus.py), with the same one-line
hints, each colon command named as the magic that runs it here; `%run` is IPython's own in a kernel (it runs a file),
so its failure says what it found missing and how a kernel runs another notebook."""

from __future__ import annotations

import re
import socket
import threading

import pytest

from tests.notebooks import cell, run, text_of
from tests.seeds import seed000, seed001, seed002, seed003

pytestmark = pytest.mark.slow

BATCH_SHOWN = (r"Batch: \d+ \(display_query_\d+", 1)  # a display() of a stream showed a batch: the next cell


def _notebook(url: str, sources: list[str], waits: dict[int, str], displays: tuple[int, ...] = ()):
    """The notebook's cells: sparkscope loaded on `url`, then each seed cell, and after the cells at the positions in
    `waits` the test's wait; where each seed cell is in the notebook, by its position in the seed."""
    made = [cell(f"%load_ext sparkscope\n%sparkscope --remote {url}")]
    where: list[int] = []
    for position, source in enumerate(sources):
        where.append(len(made))
        made.append(cell(source, interrupt_on=BATCH_SHOWN) if position in displays else cell(source))
        if position in waits:
            made.append(cell(f"# (the test's)\n{waits[position]}"))
    made.append(cell("# (the test's: a notebook's queries outlive its kernel, and the server is shared)\n"
                     "%stop --all"))
    return made, where


def _errors(nb, where: list[int]) -> dict[int | str, list[str]]:
    """Every cell's failures: each error output (whatever the exception's type: IPython's header starts with it) and
    each line a magic said on stderr (`error: …`). The seed's cells by their position in the seed, the test's own (the
    load, the waits, the last %stop) as "test cell N": those must have none."""
    seed_of = {index: position for position, index in enumerate(where)}
    failed: dict[int | str, list[str]] = {}
    for index, executed in enumerate(nb.cells):
        lines = []
        for output in executed.get("outputs", []):
            if output["output_type"] == "error":  # sparkscope's one line (CellFailed), or any other exception
                value = re.sub(r"\x1b\[[0-9;]*m", "", output["evalue"])
                value = re.sub(r" \([^()]*, line \d+\)$", "", value)  # a SyntaxError's cell file: a number each run
                lines.append(value if output["ename"] == "CellFailed" else f"{output['ename']}: {value}")
            elif output["output_type"] == "stream" and output.get("name") == "stderr":
                lines += [line for line in output["text"].splitlines() if line.startswith("error:")]
        if lines:
            failed[seed_of.get(index, f"test cell {index}")] = lines
    return failed


def _until(condition: str, seconds: int) -> str:
    """A wait cell's code: until `condition` holds, each active query given a second, within `seconds`."""
    return (f"import time\ndeadline = time.monotonic() + {seconds}\n"
            f"while not ({condition}) and time.monotonic() < deadline:\n"
            "    spark.streams.awaitAnyTermination(1)\n"
            f"assert {condition}, 'not within {seconds} s'")


def test_seed002_runs_as_a_notebook_every_cell_as_written(tmp_path, remote_url):
    cells = [(number, source) for number, source in seed002(tmp_path) if number != "None"]
    numbers = [number for number, _ in cells]
    assert len(cells) == 24
    made, where = _notebook(remote_url, [source for _, source in cells], waits={
        numbers.index("6"): "mobileConsoleSQ.processAllAvailable()",
        numbers.index("13"): "iotMemorySQ.processAllAvailable()",
        numbers.index("18"): "iotByRackConsoleSQ.processAllAvailable()"})
    nb, _ = run(made, cwd=str(tmp_path))
    assert _errors(nb, where) == {}
    said = {number: text_of(nb.cells[where[position]]) for position, number in enumerate(numbers)}
    everything = "\n".join(text_of(c) for c in nb.cells)
    # cell 6's console sink: its first batch, the 10-minute windows counted per action
    assert re.search(r"2018-03-02 10:00:00.*2018-03-02 10:10:00.*\| open\s+\| 2\s+\|", everything), everything
    assert said["11"].strip().endswith("True")  # rack_temperature.isStreaming
    assert re.search(r"\{2018-03-02 09:55:00, 2018-03-02 10:05:00\}\|100\.0\s*\|", said["15"]), said["15"]
    assert re.search(r"\{2018-03-02 10:00:00, 2018-03-02 10:10:00\}\|rack2\|80\.0", said["19"]), said["19"]
    assert "A new session" in said["29"], said["29"]  # spark.stop(), then the notebook's getOrCreate again


def test_seed000_databricks_cells_run_as_a_notebook_with_fs_and_display(tmp_path, remote_url):
    cells, hourly = seed000(tmp_path)
    sources = [source for _, source in cells]
    parquet_start = next(position for position, source in enumerate(sources)
                         if source.rstrip().endswith(".start()") and "parquet" in source)
    made, where = _notebook(remote_url, sources, waits={
        parquet_start: (f"def committed():  # the first window the watermark closed, committed\n"
                        f"    try:\n        return spark.read.parquet('{hourly}').count() > 0\n"
                        f"    except Exception:  # no file committed yet: no schema to read\n        return False\n"
                        + _until("committed()", 60))})
    nb, _ = run(made, cwd=str(tmp_path))
    failed = _errors(nb, where)
    # as pasted in the REPL: the second `counts` query, started while the first still runs
    assert list(failed.values()) == [[
        "error: Cannot start query with name counts as a query with that name is already active in this "
        "SparkSession. Stop it first (%stop counts) or pick another name."]], failed
    fs = [text_of(nb.cells[where[position]]) for position, source in enumerate(sources) if source.startswith("%fs")]
    assert len(fs) == 5 and re.search(r"\| file:\S+/events/file-0\.json +\| file-0\.json +\| \d+ +\|", fs[0]), fs[0]
    assert '{"time": "2016-07-26 02:00:00", "action": "Close"}' in fs[1], fs[1]
    hourly_counts = next(text_of(nb.cells[where[position]]) for position, source in enumerate(sources)
                         if source.startswith("display(staticCountsDF"))
    for hour, action, count in (("02", "Close", 10), ("02", "Open", 20), ("03", "Close", 7), ("03", "Open", 13)):
        assert re.search(rf"\| {action}\s+\| \{{2016-07-26 {hour}:00:00, [^}}]+\}}\s+\| {count}\s+\|",
                         hourly_counts), hourly_counts
    assert text_of(nb.cells[where[-1]]).strip().splitlines()[-1] == "1"  # the parquet sink's one closed window


def test_seed003_sensor_cells_run_as_a_notebook_with_live_displays(tmp_path, remote_url):
    cells, out_path = seed003(tmp_path)
    numbers = [number for number, _ in cells]
    made, where = _notebook(remote_url, [source for _, source in cells],
                            displays=(numbers.index("30"), numbers.index("41")), waits={numbers.index("20"): _until(
                                "query.lastProgress and query.lastProgress['batchId'] >= 2 and "
                                "query.status['isDataAvailable'] is False", 120)})
    nb, _ = run(made, cwd=str(tmp_path))
    firsts = sorted(lines[0].split(".")[0] for lines in _errors(nb, where).values())
    streaming_sql = "error: This SQL reads a stream"
    # as in the REPL: SQL over a stream (three cells), an empty %sql, a Scala comment (Python's SyntaxError, as
    # there), and the %run of the setup notebooks, which in a kernel is IPython's %run of a file: none here
    assert firsts == sorted([streaming_sql, streaming_sql, streaming_sql, "error: %sql needs a statement",
                             "SyntaxError: invalid syntax", 'error: %run found no file "',
                             'error: %run found no file "']), firsts
    assert text_of(nb.cells[where[numbers.index("4")]]).strip() == (
        'error: %run found no file "./setup/setup_data". In a kernel %run runs a Python file or a notebook (give its '
        ".py or .ipynb); a Databricks notebook's %run of another notebook needs that one here.")
    assert list(out_path.glob("*.parquet")), "the ETL query wrote no parquet"
    for number in ("30", "41"):  # display() of a stream: a live output, until the interrupt
        shown = text_of(nb.cells[where[numbers.index(number)]])
        assert "Batch:" in shown and "Stopped updating: the kernel was interrupted" in shown, shown
    assert "StreamingQuery" in text_of(nb.cells[where[numbers.index("43")]])


class _Lines:
    """A socket server on a free port of localhost, as `nc -lk` in the guide: each connection gets these lines and
    is held open until the server is closed."""

    def __init__(self, text: bytes):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.text = text
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            conn.sendall(self.text)
            self.held.append(conn)

    def close(self) -> None:
        self.listener.close()
        for conn in self.held:
            conn.close()


def test_seed001_socket_word_count_runs_as_a_notebook(tmp_path, remote_url):
    lines = _Lines(b"apache spark\napache hadoop\n")
    try:
        cells = [source for number, source in seed001(lines.port) if number != "None"]
        assert len(cells) == 3  # the guide's word count; its fragments (In [None]) never ran
        made, where = _notebook(remote_url, cells, waits={
            2: _until("sum(p.numInputRows for p in query.recentProgress) >= 2", 60)})  # both lines counted
        nb, _ = run(made, cwd=str(tmp_path))
        assert _errors(nb, where) == {}
        everything = "\n".join(text_of(c) for c in nb.cells)
        assert re.search(r"\| apache +\| 2 +\|", everything) and re.search(r"\| spark +\| 1 +\|", everything), \
            everything
    finally:
        lines.close()
