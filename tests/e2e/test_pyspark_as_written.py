"""Code written for pyspark, typed into the REPL or run with -f as it was written (issue 24).

Each test drives the real `sparkscope` command and asserts what the user sees: the session that
getOrCreate() gives, a stream still running (and making batches) after Ctrl-C in a wait, console
batches printed here, a REPL that works after spark.stop(), and scripts that read sys.argv."""

from __future__ import annotations

import re
import textwrap

import pexpect

from tests.e2e.conftest import Repl, clean, spawn
from tests.helpers import run_sparkscope, wait_for


def _batch(repl: Repl, query: str) -> int:
    out = repl.run(f"({query}.lastProgress or {{}}).get('batchId', -1)")
    return int(re.findall(r"^-?\d+$", out, re.M)[-1])


def _still_making_batches(repl: Repl, query: str) -> None:
    assert repl.run(f"{query}.isActive").strip().endswith("True")
    before = _batch(repl, query)
    wait_for(lambda: _batch(repl, query) > before, timeout=60, what=f"{query} to make another batch")


def _interrupt_while_waiting(repl: Repl, line: str) -> str:
    repl.child.send(line + "\r")
    repl.child.expect(r"\(still running; Ctrl-C", timeout=30)  # the wait is under way
    repl.child.sendintr()
    return repl.prompt()


def test_getorcreate_gives_the_repl_session_with_runtime_confs_and_one_note(repl):
    out = repl.run('s2 = SparkSession.builder.appName("Seed").master("local[*]")'
                   '.config("spark.sql.shuffle.partitions", "3").getOrCreate()')
    note = ("note: getOrCreate() gives sparkscope's session; appName, master are set when a server starts, so not "
            "applied here (sparkscope server start --conf KEY=VALUE sets a server's)")
    assert [line.strip() for line in out.splitlines()].count(note) == 1, out
    assert repl.run("s2 is spark").strip().endswith("True")
    assert repl.run('spark.conf.get("spark.sql.shuffle.partitions")').strip().endswith("'3'")
    assert "note:" not in repl.run('SparkSession.builder.appName("Seed").getOrCreate() is spark')  # said once
    assert repl.run("SparkSession.getActiveSession() is spark").strip().endswith("True")


def test_ctrl_c_in_a_wait_leaves_the_query_running_and_making_batches(repl):
    repl.run('q = spark.readStream.format("rate").option("rowsPerSecond", 5).load()'
             '.writeStream.format("memory").queryName("waited").start()')
    out = _interrupt_while_waiting(repl, "q.awaitTermination()")
    assert "Stopped waiting for waited; it keeps running (:stop waited ends it)." in out
    _still_making_batches(repl, "q")
    out = _interrupt_while_waiting(repl, "q.awaitTermination(600)")
    assert "Stopped waiting for waited" in out
    out = _interrupt_while_waiting(repl, "spark.streams.awaitAnyTermination()")
    assert "Stopped waiting; the queries keep running" in out
    _still_making_batches(repl, "q")
    # one cell that starts a query and waits on it, as every seed ends
    out = _interrupt_while_waiting(repl, 'q2 = spark.readStream.format("rate").load().writeStream'
                                         '.format("memory").queryName("cell").start(); q2.awaitTermination()')
    assert "Stopped waiting for cell" in out
    _still_making_batches(repl, "q2")
    assert repl.run("q.awaitTermination(1)").strip().endswith("False")  # a timed wait still answers
    repl.run(":stop --all")


def test_a_console_sink_prints_its_batches_above_the_prompt(repl, data_dir):
    (data_dir / "1.json").write_text('{"word": "spark"}\n{"word": "a-word-longer-than-twenty-characters"}\n')
    repl.run(f'words = spark.readStream.schema("word string").json("{data_dir}")')
    repl.run('q = words.writeStream.format("console").start()')
    text = clean(repl.expect(r"Batch: 0 \(console_\d+\)[\s\S]*?new rows\)", timeout=60))
    assert "spark" in text and "a-word-longer-tha..." in text  # truncate=true cuts cells at 20
    repl.run('q2 = words.writeStream.format("console").option("truncate", "false").queryName("full").start()')
    text = clean(repl.expect(r"Batch: 0 \(full\)[\s\S]*?new rows\)", timeout=60))
    assert "a-word-longer-than-twenty-characters" in text


def test_a_console_sink_prints_whole_values_with_truncate_false_and_the_empty_batch_0(repl, data_dir):
    """Spark's console sink: truncate=False prints a 300-character value whole (the terminal wraps it), and a rate
    stream's first batch, which has no rows, still prints its header."""
    long = "x" * 150 + "y" * 150
    (data_dir / "1.json").write_text(f'{{"word": "{long}"}}\n')
    repl.run(f'words = spark.readStream.schema("word string").json("{data_dir}")')
    repl.run('q = words.writeStream.format("console").option("truncate", False).queryName("whole").start()')
    raw = repl.expect(r"Batch: 0 \(whole\)[\s\S]*?new rows\)", timeout=60)
    assert long in raw.replace("\r\n", "") and "…" not in raw, raw
    repl.run('r = spark.readStream.format("rate").option("rowsPerSecond", 1).load()')
    repl.run('q2 = r.writeStream.format("console").queryName("ticks_console").start()')
    text = clean(repl.expect(r"Batch: 0 \(ticks_console\)[\s\S]*?new rows\)", timeout=60))
    assert "(0 new rows)" in text, text
    repl.expect(r"Batch: 1 \(ticks_console\)", timeout=60)
    repl.run(":stop --all")


def test_a_continuous_query_into_a_console_sink_prints_its_epochs_as_they_commit(repl):
    """The programming guide's continuous example: no progress events, so the epochs are read as they commit."""
    repl.run('spark.readStream.format("rate").option("rowsPerSecond", "10").load().writeStream.format("console")'
             '.trigger(continuous="1 second").queryName("epochs").start()')
    text = clean(repl.expect(r"Batch: \d+ \(epochs\)[\s\S]*?\((\d+) new rows\)", timeout=90))
    assert int(repl.child.match.group(1)) > 0 and re.search(r"\| \d{4}-\d\d-\d\d \d\d:\S+\s*\| \d+\s+\|", text), text
    said = repl.run(":progress epochs")
    assert re.search(r"\(epochs runs in continuous mode, which reports no progress; its status: [^.]+\. :peek "
                     r"epochs shows its rows\)", said), said
    repl.run(":stop --all")


def test_a_foreach_writer_query_is_named_for_its_sink_and_why_it_cannot_come_back(repl):
    """The guide's foreach example: a row function. It is a foreach sink (not foreachBatch), and its function lives
    in this process only, so the catalog cannot restart it later."""
    repl.run("def process_row(row):\r    pass\r")
    out = repl.run("query = spark.readStream.format('rate').load()"
                   ".writeStream.foreach(process_row).queryName('rows_one_by_one').start()")
    assert ("rows_one_by_one cannot be restarted from the catalog: its foreach writer lives only in this Python "
            "process") in out, out
    assert re.search(r"\| rows_one_by_one +\| [0-9a-f]{8} +\| active +\| foreach +\|", repl.run(":queries"))
    repl.run(":stop rows_one_by_one")


def test_two_queries_on_one_checkpoint_as_the_guide_s_totable_example_says_why_the_second_failed(repl, tmp_path):
    """The guide's toTable example gives both queries one checkpointLocation: the second fails as it starts, before
    this process has registered it. One alert says why, and the catalog says failed (not stopped, nor lost)."""
    checkpoint = tmp_path / "shared"
    repl.run(f"first = spark.readStream.format('rate').load().writeStream.option('checkpointLocation', "
             f"'{checkpoint}').toTable('guide_first')")
    repl.run("first.processAllAvailable()")
    repl.child.send(f"second = spark.readStream.table('guide_first').select('value').writeStream.option("
                    f"'checkpointLocation', '{checkpoint}').format('parquet').toTable('guide_second')\r")
    alert = clean(repl.expect(r"alert: \w+ failed: .*?\(details: :exception \w+\)", timeout=60))
    assert ("failed: its checkpoint holds metadata it cannot read, written by another query with the same "
            "checkpointLocation; give each query a checkpointLocation of its own") in alert, alert
    name = re.search(r"alert: (\w+) failed", alert).group(1)
    repl.prompt()
    listed = repl.run(":queries --all")
    assert re.search(rf"\| {name} +\| [0-9a-f]{{8}} +\| failed +\|", listed), listed
    repl.run(":stop --all")


def test_the_same_cell_run_twice_on_one_checkpoint_says_spark_stopped_the_first_run(repl, tmp_path):
    """Spark stops a query running on a checkpoint when another starts on it, and says so only in the server's
    log: the pyspark shell shows nothing, and the first query is simply gone."""
    cell = (f"q = spark.readStream.format('rate').load().writeStream.format('noop')"
            f".option('checkpointLocation', '{tmp_path / 'cp'}').start()")
    assert "notice" not in repl.run(cell)
    repl.run("first_id = q.runId; q.processAllAvailable()")
    out = repl.run(cell)
    name = repl.run("q.id[:8]").strip().splitlines()[-1].strip("'")
    assert (f"\nnotice: Spark stopped the earlier run of {name} as this query started: both use the checkpoint "
            f"{tmp_path / 'cp'}, and Spark runs one query per checkpoint. Give each query a checkpointLocation of its "
            "own\n") in out, out
    assert repl.run("[(s.runId == first_id, s.isActive) for s in spark.streams.active]").strip().endswith(
        "[(False, True)]")
    repl.run(":stop --all")


def test_a_listener_whose_callbacks_raise_is_warned_about_as_pyspark_does(repl):
    """Spark's programming guide has one: its callbacks name functions nobody defined."""
    repl.child.send("from pyspark.sql.streaming import StreamingQueryListener\r")
    repl.prompt()
    listener = ("class Listener(StreamingQueryListener):\n"
                "    def onQueryStarted(self, event):\n        print_started(event.id)\n"
                "    def onQueryProgress(self, event):\n        print_progress(event.progress.id)\n"
                "    def onQueryIdle(self, event):\n        pass\n"
                "    def onQueryTerminated(self, event):\n        pass\n")
    repl.child.send("\x1b[200~" + listener + "\x1b[201~\r")  # pasted, as the guide's snippet would be
    repl.prompt()
    repl.run("spark.streams.addListener(Listener())")
    said = repl.run('q = spark.readStream.format("rate").load().writeStream.format("memory").queryName("heard")'
                    '.start()')  # onQueryStarted's warning may come before the prompt does, or after it
    pattern = r"warning: Listener <__main__\.Listener object at 0x[0-9a-f]+> threw an exception: name '{}' is not defined"
    said += repl.expect(pattern.format("print_progress"), timeout=60)
    said += repl.prompt()
    assert len(re.findall(pattern.format("print_started"), said)) == 1, said
    assert len(re.findall(pattern.format("print_progress"), said)) == 1, said  # once: Python's default filter
    repl.run(":stop --all")


def test_spark_stop_asks_then_gives_a_fresh_session(repl):
    repl.run('q = spark.readStream.format("rate").load().writeStream.format("memory").queryName("kept").start()')
    repl.child.send("spark.stop()\r")
    repl.child.expect(r"spark\.stop\(\) closes this session\. 1 query is still running \(kept\)\. Stop it\? "
                      r"\[y/N\]", timeout=30)
    repl.child.send("y\r")
    out = repl.prompt()
    assert re.search(r"spark\.stop\(\) closed session [0-9a-f]{8}; stopped kept\. A new session [0-9a-f]{8} is "
                     r"ready: spark, ss and the commands use it\.", out), out
    assert repl.run("spark.range(3).count()").strip().endswith("3")
    assert "no queries" in repl.run(":queries")
    assert repl.run(":stop --all").strip().endswith("Stopped 0 queries")


def test_spark_stop_while_a_console_query_prints_its_batches_closes_at_once(repl):
    """The console query's batches print from a thread that reads through the session spark.stop() closes: closing
    never waits for pyspark's session lock that thread may hold (it hung before)."""
    repl.run('q = spark.readStream.format("rate").load().writeStream.format("console").queryName("printing").start()')
    repl.expect(r"Batch: \d+ \(printing\)", timeout=60)
    repl.child.send("spark.stop()\r")
    repl.child.expect(r"1 query is still running \(printing\)\. Stop it\? \[y/N\]", timeout=30)
    repl.child.send("y\r")
    out = repl.prompt()
    assert re.search(r"stopped printing\. A new session [0-9a-f]{8} is ready", out), out
    assert repl.run("spark.range(2).count()").strip().endswith("2")


def test_a_query_left_running_by_spark_stop_is_ended_by_stop(repl):
    repl.run('q = spark.readStream.format("rate").load().writeStream.format("memory").queryName("left").start()')
    repl.child.send("spark.stop()\r")
    repl.child.expect(r"Stop it\? \[y/N\]", timeout=30)
    repl.child.send("n\r")
    out = repl.prompt()
    assert "left running in the old session: left (:stop NAME ends one)" in out, out
    old = re.search(r"closed session ([0-9a-f]{8})", out).group(1)
    assert re.search(rf"Stopped left in session {old}, where it was left running", repl.run(":stop left"))
    assert re.search(r"\|\s*left\s*\|\s*\w+\s*\|\s*stopped\s*\|", repl.run(":queries --all"))
    assert "No query named 'left'" in repl.run(":stop left")


def test_raise_systemexit_leaves_as_exit_does(remote_url):
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    repl.run(":start leaving ss.source.rate(1)")
    child.send("raise SystemExit\r")
    child.expect(r"1 query is still running \(leaving\)\. Stop it\? \[y/N\]", timeout=30)
    child.send("y\r")
    child.expect(pexpect.EOF, timeout=30)
    assert "Stopped leaving." in clean(child.before)


def test_a_complete_pasted_cell_runs_on_one_enter(repl):
    # before: an indented last line held the cell for a second Enter
    out = repl.run('total = (spark.range(10)\r    .selectExpr("sum(id) AS s")\r    .first()["s"])\rtotal')
    # the cell ran on the Enter after `.first()["s"])`; `total` was then a cell of its own
    assert out.strip().endswith("45"), out


def test_a_dumb_terminal_connects_and_answers(remote_url):
    child = spawn("--remote", remote_url, env={"TERM": "dumb"})
    child.send("spark.range(7).count() * 6\r")  # typed while it connects
    child.expect(r"\r\n42\r\n", timeout=60)
    child.send(":queries\r")
    child.expect(r"no queries: start one with :start NAME", timeout=30)
    child.send(":quit\r")
    child.expect(pexpect.EOF, timeout=30)


def test_a_narrow_terminal_and_piped_stdin_answer(remote_url):
    child = spawn("--remote", remote_url, cols=40)
    repl = Repl(child)
    repl.prompt()
    assert repl.run("spark.range(5).count()").strip().endswith("5")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=30)
    import subprocess

    from tests.helpers import sparkscope_bin

    out = subprocess.run([sparkscope_bin(), "--remote", remote_url], input="spark.range(3).count()\n",
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


PROGRAM = '''\
import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import explode, split

if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("Usage: words.py <directory> <name>", file=sys.stderr)
        sys.exit(-1)
    directory, name = sys.argv[1:]
    spark = SparkSession.builder.appName("StructuredWordCount").getOrCreate()
    lines = spark.readStream.text(directory)
    words = lines.select(explode(split(lines.value, " ")).alias("word"))
    counts = words.groupBy("word").count().orderBy("word")
    query = counts.writeStream.outputMode("complete").format("console").queryName(name).start()
    query.awaitTermination(8)
    query.processAllAvailable()
    spark.stop()
'''


def test_a_pyspark_program_runs_unchanged_with_its_arguments(tmp_path, remote_url):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "1.txt").write_text("to be or not to be\n")
    script = tmp_path / "words.py"
    script.write_text(PROGRAM)
    out = run_sparkscope("--remote", remote_url, "-f", str(script), str(tmp_path / "in"), "wc", timeout=180)
    assert out.returncode == 0, out.stderr
    assert "Batch: 0 (wc)" in out.stdout
    table = out.stdout.split("Batch: 0 (wc)", 1)[1]
    assert re.search(r"\| be\s+\| 2\s+\|", table) and re.search(r"\| to\s+\| 2\s+\|", table), out.stdout
    assert "False" not in out.stdout  # a script's expression values are not echoed, as in python
    # sparkscope FILE.py ARGS… is the same; a usage error exits with the script's own code
    usage = run_sparkscope("--remote", remote_url, str(script), timeout=120)
    assert usage.returncode == 255, usage.stderr
    assert "Usage: words.py <directory> <name>" in usage.stderr


def test_a_query_naming_no_checkpoint_starts_fresh_each_run(tmp_path, remote_url):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "1.json").write_text('{"k": "a"}\n{"k": "a"}\n{"k": "b"}\n')
    script = tmp_path / "dup.py"
    script.write_text(textwrap.dedent(f'''\
        df = spark.readStream.schema("k string").json("{tmp_path / 'in'}").groupBy("k").count()
        q = df.writeStream.format("memory").queryName("dupcheck").outputMode("complete").start()
        q.processAllAvailable()
        print(sorted(tuple(r) for r in spark.table("dupcheck").collect()))
        '''))
    for _ in range(2):
        out = run_sparkscope("--remote", remote_url, "-f", str(script), timeout=180)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[('a', 2), ('b', 1)]"
    listed = run_sparkscope("--remote", remote_url, "-c", ":queries --all", timeout=120)
    assert re.search(r"dupcheck .*stopped .*yes", listed.stdout), listed.stdout  # catalogued: restartable


def test_a_script_stops_only_the_queries_it_started(remote_url):
    left = run_sparkscope("--remote", remote_url, "--detach", "-c",
                          'q = spark.readStream.format("rate").load().writeStream.format("memory")'
                          '.queryName("found").start()', timeout=120)
    assert left.returncode == 0, left.stderr
    try:
        looked = run_sparkscope("--remote", remote_url, "--reattach", "-c", ":queries", timeout=120)
        assert looked.returncode == 0, looked.stderr
        assert "found" in looked.stdout and "Stopped" not in looked.stderr
        assert "Left running: found (this script did not start them)." in looked.stderr
        again = run_sparkscope("--remote", remote_url, "--reattach", "-c", ":queries", timeout=120)
        assert re.search(r"found .*active", again.stdout), again.stdout
    finally:
        run_sparkscope("--remote", remote_url, "--reattach", "-c", ":stop --all", timeout=120)


def test_display_shows_a_table_or_a_live_stream_that_keeps_running(repl):
    out = repl.run("display(spark.range(3).selectExpr('id * 7 AS seven'))")
    assert re.search(r"\| seven \|[\s\S]*\| 14\s+\|", out), out
    repl.child.send('display(spark.readStream.format("rate").option("rowsPerSecond", 2).load(), '
                    'streamName="shown")\r')
    repl.child.expect(r"display: started shown \(:stop shown ends it\)", timeout=60)
    repl.child.expect(r"Batch: \d+ \(shown\)[\s\S]*?new rows\)", timeout=60)
    first = repl.child.after
    repl.child.sendintr()
    said = "Stopped waiting for shown; it keeps running (:stop shown ends it)."
    answer = repl.prompt()
    assert said in answer, answer
    printed = [int(n) for n in re.findall(r"Batch: (\d+) \(shown\)", clean(first) + answer.split(said)[0])]
    assert "Batch:" not in answer.split(said)[1], answer  # nothing prints after the stop is said

    def two_batches_later() -> str | None:  # the query commits on: none of its batches print any more
        out = repl.run(":queries")
        assert "Batch:" not in out, out
        batch = re.search(r"\| shown\s+\| [0-9a-f]{8} \| active .*?\| (\d+)\s+\|", out)
        return out if batch and int(batch.group(1)) >= max(printed, default=0) + 2 else None

    wait_for(two_batches_later, timeout=60, every=0.5, what="shown to commit two more batches")
    assert repl.run(":stop shown").strip().endswith("Stopped shown")


def test_dbutils_fs_works_on_this_machines_files_and_the_rest_of_databricks_is_one_line(repl, tmp_path):
    """Seed 000 and 003 clear and make their folders with dbutils.fs: on a server sparkscope started here, those
    are this machine's files, so it does what Databricks documents, with the same return values."""
    base = tmp_path / "fs"

    def last(shell, line: str) -> str:  # a long line wraps at the prompt: its answer is the last line
        return shell.run(line).strip().splitlines()[-1]

    assert last(repl, f'dbutils.fs.mkdirs("{base}/in")') == "True"  # after (connecting…)
    assert last(repl, f'dbutils.fs.put("file:{base}/in/a.json", \'{{"id": 1}}\')') == "True"
    assert last(repl, f'dbutils.fs.head("{base}/in/a.json")') == "'{\"id\": 1}'"
    assert last(repl, f'[f.name for f in dbutils.fs.ls("{base}")]') == "['in/']"
    assert last(repl, f'dbutils.fs.cp("{base}/in/a.json", "{base}/b.json")') == "True"
    assert last(repl, f'dbutils.fs.mv("{base}/b.json", "{base}/c.json")') == "True"
    assert sorted(p.name for p in base.iterdir()) == ["c.json", "in"]
    out = last(repl, f'dbutils.fs.put("{base}/c.json", "x")')
    assert out == f"error: File file:{base}/c.json already exists. put(file, contents, overwrite=True) replaces it."
    assert last(repl, f'dbutils.fs.rm("{base}", True)') == "True"
    assert not base.exists()
    assert last(repl, f'dbutils.fs.rm("{base}", True)') == "False"
    assert last(repl, 'dbutils.fs.ls("dbfs:/databricks-datasets")') == (
        "error: dbfs:/databricks-datasets is a path of Databricks' DBFS, which this machine does not have. Give a "
        "plain or file: path; Use Python here: os, shutil and pathlib for files (dbutils.fs), input() or sys.argv "
        "for widgets, os.environ for secrets.")
    assert last(repl, 'dbutils.widgets.get("date")') == (
        "error: dbutils.widgets.get exists only on Databricks. Use Python here: os, shutil and pathlib for files "
        "(dbutils.fs), input() or sys.argv for widgets, os.environ for secrets.")


def test_databricks_only_names_get_one_line_and_sql_and_fs_magics_run(repl, tmp_path):
    assert re.search(r"\| two \|[\s\S]*\| 2\s+\|", repl.run("%sql SELECT 1 + 1 AS two"))
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("first line\n")
    listed = repl.run(f"%fs ls {tmp_path}")
    assert re.search(rf"\| file:{tmp_path}/folder/ +\| folder/ +\| 0 +\| \d+ +\|", listed), listed
    assert re.search(rf"\| file:{tmp_path}/notes.txt +\| notes.txt +\| 11 +\| \d+ +\|", listed), listed
    assert "(2 entries)" in listed
    assert repl.run(f"%fs head {tmp_path}/notes.txt").strip().endswith("first line")
    assert repl.run(f"%fs rm -r {tmp_path}/folder").strip().endswith("True") and not (tmp_path / "folder").exists()
    assert repl.run(f"%fs ls {tmp_path}/gone").strip().splitlines()[-1] == (
        f"error: File file:{tmp_path}/gone does not exist. Check the path with %fs ls.")
    assert repl.run("%fs chmod 777 x").strip().splitlines()[-1] == (
        "error: %fs chmod 777 x is not a %fs command sparkscope runs. Use %fs ls|head|mkdirs|rm PATH, %fs cp|mv FROM TO "
        "or %fs put PATH TEXT; flags: -r (--recurse) for rm, cp and mv, --maxBytes=N for head, -f (--overwrite) for "
        "put; quote a path with spaces.")
    assert repl.run("%sh ls").strip().splitlines()[-1] == (
        "error: %sh is a Databricks notebook magic. Run shell commands in your terminal, or with subprocess.run in "
        "Python.")
    assert repl.run("1 + 1").strip().endswith("2")  # the REPL goes on


def test_display_of_a_stream_as_the_first_thing_on_a_server_this_client_has_not_asked(server, tmp_path):
    """display() asks the server what it can run from inside the user's cell: its Kafka question went through the
    REPL's own load() wrapper and waited on itself, so a first display() of a stream hung (an empty state dir: the
    server is unknown)."""
    child = spawn("--remote", f"sc://localhost:{server.port}",
                  env={"XDG_STATE_HOME": str(tmp_path), "SPARK_CONNECT_AUTHENTICATE_TOKEN": server.token or ""})
    repl = Repl(child)
    try:
        repl.prompt()
        child.send('display(spark.readStream.format("rate").option("rowsPerSecond", 2).load(), '
                   'streamName="first")\r')
        child.expect(r"display: started first \(:stop first ends it\)", timeout=90)
        child.expect(r"Batch: \d+ \(first\)", timeout=90)
        child.sendintr()
        assert "Stopped waiting for first" in repl.prompt()
        assert repl.run(":stop first").strip().endswith("Stopped first")
    finally:
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=30)


def test_the_guide_s_socket_example_with_nobody_on_the_port_says_the_query_s_own_failure(tmp_path, remote_url):
    """Spark's programming guide as written, against a port nobody serves: the query fails (Connection refused,
    from the server's socket source), and that is what is said; the server did not restart, and the session goes
    on."""
    from sparkscope.server.ports import free_port

    script = tmp_path / "guide.py"
    script.write_text(textwrap.dedent(f"""\
        from pyspark.sql import SparkSession
        from pyspark.sql.functions import explode, split
        spark = SparkSession.builder.appName("StructuredNetworkWordCount").getOrCreate()
        lines = spark.readStream.format("socket").option("host", "localhost").option("port", {free_port()}).load()
        words = lines.select(explode(split(lines.value, " ")).alias("word"))
        wordCounts = words.groupBy("word").count()
        query = wordCounts.writeStream.outputMode("complete").format("console").start()
        try:
            query.awaitTermination(10)
        except Exception as exc:
            print("raised", type(exc).__name__)
        print("answers", spark.range(3).count())
        query.awaitTermination(10)
        """))
    ran = run_sparkscope("--remote", remote_url, "-f", str(script))
    assert "raised StreamingQueryException" in ran.stdout and "answers 3" in ran.stdout, (ran.stdout, ran.stderr)
    assert re.fullmatch(r"error: Query \[id = [0-9a-f-]+, runId = [0-9a-f-]+\] terminated with exception: "
                        r"Connection refused\.", ran.stderr.strip().splitlines()[-1]), ran.stderr
    assert "restarted" not in ran.stderr and ran.returncode == 1
