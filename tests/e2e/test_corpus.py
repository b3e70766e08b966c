"""Code nobody here wrote, pasted as written: seed 002's notebook cells (windows, sliding windows, a
memory sink read with SQL, a watermark), one cell at a time into one REPL, with only the data
folders made absolute (the server resolves relative paths from its own directory).

Between cells the test waits on a fact a person at the notebook waits for by eye (a query has
processed its input); those lines are the test's, not the seed's."""

from __future__ import annotations

import re

import pexpect

from tests.e2e.conftest import Repl, clean, spawn
from tests.helpers import wait_for
from tests.seeds import CORPUS, notebook_cells, seed000, seed002, seed003

SEED = CORPUS / "seed002_windows.txt"


def test_the_cells_are_read_as_the_notebook_shows_them():
    cells = notebook_cells(SEED.read_text())
    assert len(cells) == 25 and cells[-2] == ("None", "cat ")  # a cell the notebook never ran (In [None]) too
    assert cells[0][1].endswith('spark = SparkSession.builder.appName("SQL").getOrCreate()')
    assert cells[4] == ("6", 'mobileConsoleSQ = windCountDF.writeStream.format("console")\\\n'
                             '                    .option("truncate", "false")\\\n'
                             '                    .outputMode("complete")\\\n'
                             '                    .start()')
    assert all(source for _, source in cells)  # every cell of this seed is Python


def test_seed002_cells_pasted_as_written(tmp_path, remote_url):
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    seen = {}
    for number, source in seed002(tmp_path):
        if number == "None":  # a cell the notebook never ran
            continue
        child.send(source.replace("\n", "\r") + "\r")
        out = repl.prompt()
        seen[number] = out
        assert "Traceback" not in out and "error:" not in out, (number, source, out)
        for started, name in (("13", "iotMemorySQ"), ("18", "iotByRackConsoleSQ")):
            if number == started:  # what a person waits for by eye before reading the table
                repl.run(f"{name}.processAllAvailable()")
        if number == "6":
            table = clean(repl.expect(r"Batch: 0 \(console_\d+\)[\s\S]*?rows in the result\)", timeout=60))
            assert re.search(r"2018-03-02 10:00:00.*2018-03-02 10:10:00.*\| open\s+\| 2\s+\|", table), table
            assert re.search(r"2018-03-02 10:10:00.*2018-03-02 10:20:00.*\| close\s+\| 1\s+\|", table), table
        if number == "26":
            table = clean(repl.expect(r"Batch: 0 \(console_\d+\)[\s\S]*?new rows\)", timeout=60))
            assert re.search(r"10:00:00.*10:10:00.*\| open\s+\| 2\s+\|", table), table
    assert seen["11"].strip().endswith("True")  # rack_temperature.isStreaming
    # cell 15: sliding windows of 10 minutes every 5, averaged
    assert re.search(r"\{2018-03-02 09:55:00, 2018-03-02 10:05:00\}\|100\.0\s*\|", seen["15"]), seen["15"]
    assert re.search(r"\{2018-03-02 10:00:00, 2018-03-02 10:10:00\}\|93\.33", seen["15"]), seen["15"]
    assert re.search(r"\{2018-03-02 10:00:00, 2018-03-02 10:10:00\}\|rack2\|80\.0", seen["19"]), seen["19"]
    # the notebook's first cell again (getOrCreate), then spark.stop(): the REPL opens a new session
    assert "A new session" in seen["29"]
    assert repl.run("spark.range(3).count()").strip().endswith("3")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def _paste(repl: Repl, source: str) -> str:
    repl.child.send(source.replace("\n", "\r") + "\r")
    return repl.prompt()


def test_seed000_databricks_cells_pasted_as_written(tmp_path, remote_url):
    """Seed 000 was written on Databricks: %fs, dbutils and display() cells among the pyspark ones."""
    cells, hourly_path = seed000(tmp_path)
    assert len(cells) == 18
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    said = []
    for _, source in cells:
        out = _paste(repl, source)
        said.append(out)
        if source.rstrip().endswith(".start()") and "parquet" in source:
            # what a person waits for before reading the files: the first window the watermark closed
            wait_for(lambda: repl.run(f"spark.read.parquet('{hourly_path}').count() > 0"
                                      ).strip().endswith("True"), timeout=60, what="the parquet sink's first commit")
    errors = [line for out in said for line in out.splitlines() if line.startswith(("error:", "Traceback"))]
    # what cannot run here gets one line: the second `counts` query, started while the first still runs (Spark
    # refuses a second active query of the same name, there too)
    assert len(errors) == 1, "\n".join(errors)
    # the five %fs cells list the folders and show the head of a file, as dbutils.fs does
    fs = [out for (_, src), out in zip(cells, said, strict=True) if src.startswith("%fs")]
    assert len(fs) == 5 and re.search(r"\| file:\S+/events/file-0\.json +\| file-0\.json +\| \d+ +\|", fs[0]), fs[0]
    assert '{"time": "2016-07-26 02:00:00", "action": "Close"}' in fs[1], fs[1]
    assert "(0 entries)" in fs[2] and "| live-exercise/ " in fs[3] and "| part-0.json " in fs[4], fs
    # dbutils.fs.rm clears the sink and checkpoint folders before the stream runs: on this machine's files, and
    # a fresh run has nothing there yet (Databricks answers False then too)
    answers = [out.strip().splitlines()[-1] for (_, src), out in zip(cells, said, strict=True) if "dbutils.fs.rm" in src]
    assert answers == ["False"] * 2, answers  # (a loaded terminal may echo the typed cell before the answer)
    assert ("error: Cannot start query with name counts as a query with that name is already active in this "
            "SparkSession. Stop it first (:stop counts) or pick another name.") in errors
    # display(staticCountsDF.orderBy(...)): the hourly counts of the events
    hourly = said[5]
    for hour, action, count in (("02", "Close", 10), ("02", "Open", 20), ("03", "Close", 7), ("03", "Open", 13)):
        assert re.search(rf"\| {action}\s+\| \{{2016-07-26 {hour}:00:00, [^}}]+\}}\s+\| {count}\s+\|", hourly), hourly
    # the parquet sink in append mode: of the 5-minute windows of 10:00-10:19, only [10:00, 10:05) has
    # closed under the 10-minute watermark (10:19 - 10 min = 10:09)
    assert said[-1].strip().splitlines()[-1] == "1", said[-1]
    assert repl.run("spark.read.parquet('%s').first()['sum(num_steps)']" % hourly_path
                    ).strip().endswith("500")
    repl.run(":stop --all")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)


def _display_until(repl: Repl, pattern: str) -> str:
    """A display() cell of a stream: its batches print until Ctrl-C, as in the notebook until the next cell."""
    text = clean(repl.expect(pattern, timeout=120))
    repl.child.sendintr()
    return text + repl.prompt()


def test_seed003_sensors_as_written(tmp_path, remote_url):
    """Seed 003, every cell in order, with only its data paths changed: its ETL query writes parquet with
    dbutils.fs making its folders, the next cells read the parquet back as a stream, and the display()
    aggregations show the counts per file. What needs Databricks gets one line each."""
    cells, out_path = seed003(tmp_path)
    assert [number for number, _ in cells] == ["4", "12", "14", "16", "18", "20", "21", "23", "25", "28", "30", "32",
                                               "34", "36", "38", "39", "41", "43", "48"]
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    said: dict[str, str] = {}
    for number, source in cells:
        if number in ("30", "41"):  # display() of a stream: the counts a person reads, then the next cell
            repl.child.send(source.replace("\n", "\r") + "\r")
            said[number] = _display_until(repl, r"Batch: \d+ \(display_query_\d+\)[\s\S]*?\)\r?\n")
            continue
        said[number] = _paste(repl, source)
        if number == "20":  # what a person waits for before reading it back: the three files written as parquet
            wait_for(lambda: repl.run("query.lastProgress and query.lastProgress['batchId'] >= 2 and "
                                      "query.status['isDataAvailable'] is False").strip().endswith("True"),
                     timeout=120, what="the ETL query to write all three files")
    errors = [line for out in said.values() for line in out.splitlines() if line.startswith(("error:", "Traceback"))]
    assert "Traceback (most recent call last):" not in errors, "\n".join(errors)
    # the notebook's own (%run, %sql on streams, a Scala comment) get one line each; nothing else fails
    streaming_sql = "error: This SQL reads a stream"
    assert [line.split(".")[0] for line in errors] == [
        "error: %run is a Databricks notebook magic", streaming_sql,
        streaming_sql, "error: %sql needs a statement", streaming_sql, "error: %run is a Databricks notebook magic",
    ], "\n".join(errors)
    assert "SyntaxError" in said["39"]  # `// --- SHOW DASHBOARD ---` is Scala
    assert "'{\"timestamp\": \"2018-12-18 10:00:00\", \"deviceId\": 1" in said["14"], said["14"]  # dbutils.fs.head
    assert list(out_path.glob("*.parquet")), "the ETL query wrote no parquet"
    assert re.search(r"\| part-\S+\.parquet +\| \d+ +\|", said["21"]), said["21"]  # %fs ls of what it wrote
    # display of the files processed: the parquet read back as a stream, counted per input file
    # (one parquet part first: of file 1's 8 rows, file 2's 6 or file 3's 4, whole or split; the name is cut to the
    # terminal's width, as Databricks' display cuts a cell)
    assert re.search(r"\| file:///\S+\s*\| \S+ \S+\s*\| [1-8]\s+\|", said["30"]), said["30"]
    assert "lost_sensor_signals" not in errors and "Batch:" in said["41"]
    assert "StreamingQuery" in said["43"]  # the foreach query started, as in the notebook
    repl.run(":stop --all")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)
