"""Every feature on a server that is not sparkscope's own: the result, or one line naming what the server lacks.

Each test runs against every server of tests/servers/conftest.py: a bare server, whose Python has no pandas or
pyarrow (the official image's); Spark 4.0 with server-config/requirements.txt in its Python; and a bare server on
another Python minor version than the client's. Nothing a user types may end in `Python worker failed to connect
back`.
"""

from __future__ import annotations

import json
import re

import pytest
import uuid
from pathlib import Path

from tests.e2e.conftest import Screen
from tests.e2e.test_pyspark_as_written import (test_a_console_sink_prints_its_batches_above_the_prompt,
                                                test_display_shows_a_table_or_a_live_stream_that_keeps_running)
from tests.e2e.test_readme import test_the_first_session_runs_as_written, test_the_sdk_example_runs_as_written
from tests.helpers import run_sparkscope, wait_for
from tests.left_behind import leave_behind

# the README's session and SDK block, display() of a table and a stream, and a console sink: run here too
__all__ = ["test_the_first_session_runs_as_written", "test_the_sdk_example_runs_as_written",
           "test_display_shows_a_table_or_a_live_stream_that_keeps_running",
           "test_a_console_sink_prints_its_batches_above_the_prompt"]

WORKER_FAILED = "connect back"
OTHER_MINOR = (r"the server's Python is 3\.\d+ and this client's is 3\.\d+: Python code sent to the server needs the "
               r"same minor version on both sides")


def _rows_of(repl, command: str, pattern: str, what: str) -> str:
    """Run `command` until its output matches `pattern` (a query's first batches take a while)."""
    box: dict[str, str] = {}

    def shown() -> bool:
        box["out"] = repl.run(command)
        return re.search(pattern, box["out"]) is not None

    wait_for(shown, timeout=120, every=0.5, what=what)
    return box["out"]


def test_server_check_names_exactly_what_is_missing_and_exits_non_zero(remote_url, kind):
    done = run_sparkscope("server", "check", "--remote", remote_url, timeout=180)
    out = done.stdout
    if kind == "spark-4.0":
        assert done.returncode == 0, out + done.stderr
        assert re.search(r"\| spark +\| ok +\| 4\.0\.\d+ at sc://localhost:\d+", out), out
        # what foreachBatch needs is judged by the server's own pyspark, which the probe reports
        assert re.search(r"\| python +\| ok +\| 3\.\d+\.\d+ \([^)]+\), pyspark 4\.0\.\d+;", out), out
        assert re.search(r"\| kafka +\| ok +\| sparkscope's own source and sink", out), out
        assert "Everything sparkscope uses works on this server." in out
    else:
        assert done.returncode == 1, out + done.stderr
        assert "Missing: " + ("" if kind == "bare" else "python, ") + "foreachBatch, kafka, checkpoints." in out, out
        assert re.search(r"\| checkpoints +\| MISSING +\| no spark\.sql\.streaming\.checkpointLocation", out), out
    # the default sink needs no Python there: this client sends the server its jar
    assert re.search(r"\| bounded sink +\| ok +\| sent by this client \(sparkscope\.jar, a session artifact\)",
                     out), out
    # a server sparkscope did not start checks no user against a token: it says so, and the jar's limits hold there
    assert re.search(r"\| users +\| - +\| labels: the server checks no user id against a token", out), out
    assert re.search(r"\| limits +\| - +\| 1,000,000 rows a ring, a grace period of at most 7 days, 64 rings and "
                     r"feeds", out), out
    if kind == "bare":
        assert re.search(r"\| python +\| ok +\| 3\.\d+\.\d+ ", out), out
        assert re.search(r"\| foreachBatch +\| MISSING +\| missing pandas, pyarrow, grpcio, grpcio-status, "
                         r"googleapis-common-protos, zstandard +\|", out), out
        assert re.search(r"\| kafka +\| MISSING +\| none: no spark-sql-kafka connector, and no pyarrow, "
                         r"confluent-kafka for sparkscope's own", out), out
    if kind == "other-python":
        found = re.search(r"\| python +\| MISSING +\| (3\.\d+)(?:\.\d+)?(?: \([^)]*\))?; this client: (3\.\d+)\.\d+ +\|", out)
        assert found and found.group(1) != found.group(2), out
        assert re.search(rf"use Python {found.group(1)} for this client, or a server image with Python "
                         rf"{found.group(2)}", out), out
    assert WORKER_FAILED not in out + done.stderr
    as_json = run_sparkscope("server", "check", "--remote", remote_url, "--format", "json", timeout=180)
    assert as_json.returncode == done.returncode
    assert json.loads(as_json.stdout)["ok"] is (done.returncode == 0)  # "ok" agrees with the exit code


def test_start_peek_progress_watch_and_stop_an_append_stream(repl, kind):
    lacking = kind != "spark-4.0"
    repl.run('ticks = spark.readStream.format("rate").option("rowsPerSecond", 10).load()')
    out = repl.run(":start ticks")
    # the bounded sink on every server: it runs in the JVM, sent as this session's artifact where it is not there
    assert re.search(r"Started ticks \(id [0-9a-f]{8}\) → bounded sink \(last 10,000 rows\), append mode", out), out
    assert "warning:" not in out and "memory sink" not in out, out
    if lacking:
        assert "note: no checkpoint: the server has no spark.sql.streaming.checkpointLocation, so this query " \
               "cannot be restarted and its state cannot be read; give it one (--checkpoint PATH" in out, out
    else:
        assert "note:" not in out, out
    _rows_of(repl, ":peek ticks", r"\|\s*\S+ \S+\s*\|\s*\d+\s*\|", "rows in ticks")
    _rows_of(repl, ":progress ticks", r"\| ticks\s+\| \d+", "a batch of ticks")
    repl.child.send(":watch\r")
    screen = Screen(repl.child)
    screen.wait_for(lambda text: "sparkscope :watch" in text and "ticks" in text, what="the dashboard")
    repl.child.send("q")
    repl.prompt()
    again = repl.run(":start ticks2 ticks")
    assert "→ bounded sink" in again
    assert "note:" not in again  # said once per session
    assert repl.run(":stop ticks").strip().endswith("Stopped ticks")
    # the bounded sink asks the server nothing: what it has is asked when :server asks
    assert re.search(r"\| server +\| not asked yet \(:server asks\)", repl.run(":session"))
    server = repl.run(":server")  # the table of sparkscope server check, in the REPL
    session = repl.run(":session")
    assert re.search(r"\| server +\| Spark 4\.\d+\.\d+, Python 3\.\d+(\.\d+)?; " +
                     {"bare": "missing: foreachBatch, kafka, checkpoints \\(:server\\)",
                      "other-python": "missing: python, foreachBatch, kafka, checkpoints \\(:server\\)",
                      "spark-4.0": "everything sparkscope uses works"}[kind], session), session
    assert re.search(r"\| foreachBatch +\| " + ("MISSING" if lacking else "ok") + r" +\|", server), server
    assert re.search(r"\| bounded sink +\| ok +\|", server), server
    assert WORKER_FAILED not in out + again + session + server
    # a server that sparkscope did not start: its files are not this machine's to dbutils.fs
    assert re.fullmatch(r"error: dbutils\.fs works on the files of a server sparkscope runs on this machine; "
                        r"sc://localhost:\d+ is not one\. Use Python here: .*",
                        repl.run('dbutils.fs.rm("/tmp/anything", True)').strip().splitlines()[-1])
    repl.run(":stop --all")


def test_the_default_sink_keeps_at_most_what_it_keeps_on_every_server(repl):
    """20,000 rows and more into a default :start keep 10,000 (or what --keep says), on the bare server too: there
    is no unbounded fallback."""
    repl.run('fast = spark.readStream.format("rate").option("rowsPerSecond", 25000).load()')
    assert "→ bounded sink (last 10,000 rows)" in repl.run(":start fast")
    assert "→ bounded sink (last 500 rows)" in repl.run(":start fast_kept fast --keep 500")
    def rows_in(name: str) -> int:
        said = repl.run(f"sum(p.input_rows for p in ss.streams.recent_progress(ss.streams.get('{name}'), last=100))")
        last = said.strip().splitlines()[-1]
        return int(last) if last.isdigit() else 0

    for name in ("fast", "fast_kept"):
        wait_for(lambda name=name: rows_in(name) >= 20_000, timeout=120, every=0.5, what=f"20,000 rows into {name}")
    assert repl.run("spark.table('fast').count()").strip().splitlines()[-1] == "10000"
    assert repl.run("spark.table('fast_kept').count()").strip().splitlines()[-1] == "500"
    repl.run(":stop --all")


def test_an_abandoned_ring_ends_with_its_scratch_checkpoint_and_the_jar_says_its_protocol(remote_url, kind):
    """A client killed while its query ran: its query stopped from another session, the ring is freed a grace period
    later with no client, and so is the checkpoint folder the ring made where the server has no checkpoint root."""
    import sparkscope

    with sparkscope.connect(remote_url) as ss:
        assert ss._jar.hello["protocol"] == 3 and ss._jar.hello["sessions"] is True
        ring, _ = leave_behind(remote_url, "kill", "stream")
        item = next(thing for thing in ss.kept() if thing.name == ring)
        assert (item.state, item.yours) == ("running", True)
        assert (item.scratch is not None) == (kind != "spark-4.0")  # 4.0's admin gave a checkpoint root
        assert item.scratch is None or Path(item.scratch).is_dir()
        ss.streams.stop("left_behind")
        wait_for(lambda: ring not in [thing.name for thing in ss.kept()], timeout=30, what="the ring freed")
        # the sweep takes a ring out of the registry first, then frees its rows and its folder: the listing can be
        # a moment ahead of the folder's end (seen once in a fresh-clone run)
        wait_for(lambda: item.scratch is None or not Path(item.scratch).exists(), timeout=30,
                 what="the ring's scratch checkpoint deleted")


def test_where_a_user_id_is_a_label_the_jar_still_keeps_names_apart_and_enforces_its_limits(remote_url):
    """What still holds on a server sparkscope did not start (the jar a session artifact, no interceptor): another
    user id finds nothing by this user's names, and the jar refuses what sparkscope's client never sends."""
    import sparkscope
    from sparkscope.client.errors import ConfigError
    from tests.identities import call

    with sparkscope.connect(remote_url) as ss, sparkscope.connect(f"{remote_url}/;user_id=mallory") as other:
        assert ss._jar.hello["identities"] is False and ss._jar.users().startswith("labels:")
        query = ss.start(ss.source.rate(20), "labelled", keep=10)
        wait_for(lambda: ss.peek("labelled").rows, timeout=120, what="rows kept")
        other._jar.load()
        with pytest.raises(ConfigError) as refused:
            other._jar.call("make_ring", name="huge", rows=2_000_000_000,
                            schema='{"type":"struct","fields":[]}')
        assert str(refused.value).startswith("A ring keeps at most 1,000,000 rows on this server, and 2,000,000,000 "
                                             "were asked for (spark.sparkscope.limit.rows on the server raises it)")
        assert call(other.spark, "forget", name=query.view) == [{"forgotten": False}]
        assert query.view not in [item.name for item in other.kept()]
        assert ss.peek("labelled").rows
        query.stop()


def test_getorcreate_then_await_termination_ends_with_ctrl_c(repl):
    repl.run("from pyspark.sql import SparkSession")
    repl.run("s2 = SparkSession.builder.getOrCreate()")
    repl.run('q = s2.readStream.format("rate").option("rowsPerSecond", 5).load()'
             '.writeStream.format("memory").queryName("waited").start()')
    repl.child.send("q.awaitTermination()\r")
    repl.child.expect(r"\(still running; Ctrl-C", timeout=60)
    repl.child.sendintr()
    assert "Stopped waiting for waited; it keeps running (:stop waited ends it)." in repl.prompt()
    assert repl.run("q.isActive").strip().endswith("True")
    repl.run(":stop --all")


def test_state_of_a_query_with_a_checkpoint(repl, tmp_path):
    checkpoint = tmp_path / "counts-checkpoint"
    repl.run('events = spark.readStream.format("rate").option("rowsPerSecond", 20).load()')
    repl.run("counts = events.withColumn('bucket', events.value % 3).groupBy('bucket').count()")
    started = repl.run(f":start counts --checkpoint {checkpoint}")
    assert "Started counts" in started and "error" not in started, started
    _rows_of(repl, ":progress counts", r"\| counts\s+\| [2-9]", "two batches of counts")
    out = _rows_of(repl, ":state counts", r"\|\s*2\s*\|\s*\d+\s*\|\s*\d+\s*\|", "bucket 2 in the state")
    assert re.search(r"\|\s*bucket\s*\|\s*count\s*\|\s*partition_id\s*\|", out), out
    repl.run(":stop counts")


def test_kafka_reads_through_what_the_server_has_or_says_what_it_lacks(repl, kafka_broker, kind):
    topic = f"servers_{uuid.uuid4().hex[:6]}"
    kafka_broker.create(topic, 1)
    kafka_broker.produce(topic, ["a", "b", "c"])
    out = repl.run(f'clicks = spark.readStream.format("kafka").option("kafka.bootstrap.servers", '
                   f'"{kafka_broker.bootstrap}").option("subscribe", "{topic}")'
                   '.option("startingOffsets", "earliest").load()')
    if kind != "spark-4.0":  # the line that names the source says it: nothing was defined
        lines = [line for line in out.strip().splitlines() if line.startswith("error:")]
        problem = ("the server's Python lacks pyarrow, confluent-kafka" if kind == "bare" else OTHER_MINOR)
        assert len(lines) == 1 and re.fullmatch(
            r"error: This server cannot read or write Kafka: it has no spark-sql-kafka connector, and for "
            r"sparkscope's own source " + (re.escape(problem) if kind == "bare" else problem) + r"\. Add "
            r"confluent-kafka and pyarrow to the server's Python \(pip install -r server-config/requirements\.txt\), "
            r"or start the server with Spark's connector \(--packages "
            r"org\.apache\.spark:spark-sql-kafka-0-10_2\.13:4\.3\.0\)\.", lines[0]), out
    else:
        out += repl.run(":start clicks clicks.selectExpr('CAST(value AS STRING) AS v')")
        assert ("note: Kafka through sparkscope's own source and sink (no spark-sql-kafka connector on the server); "
                "Spark before 4.3 gives a Python source no admission control, so each batch reads all that is there "
                "and maxOffsetsPerTrigger is not applied") in out, out
        peek = _rows_of(repl, ":peek clicks", r"\|\s*c\s*\|", "the three records")
        assert {"a", "b", "c"} <= set(re.findall(r"^\|\s*([abc])\s*\|", peek, re.M)), peek
    assert WORKER_FAILED not in out
    repl.run(":stop --all")


def test_rows_made_here_reach_every_server(repl):
    """createDataFrame with rows: pyspark 4.3 asks the server for confs Spark 4.0 lacks, which sparkscope fills."""
    out = repl.run('spark.createDataFrame([(1, "a"), (2, "b")], "x int, y string").collect()')
    assert "[Row(x=1, y='a'), Row(x=2, y='b')]" in out, out


def test_a_udf_runs_or_says_what_the_server_lacks(repl, kind):
    out = repl.run('spark.range(3).select(F.udf(lambda x: x + 1, "long")("id").alias("n")).collect()')
    if kind == "spark-4.0":
        assert "[Row(n=1), Row(n=2), Row(n=3)]" in out, out
    elif kind == "bare":  # Spark 4.3 runs a plain udf through Arrow; the line says how to run it without
        assert out.strip().splitlines()[-1] == (
            "error: The server's Python has no module 'pyarrow', which Arrow UDFs (the default for udf) need there. "
            "For a plain udf: spark.conf.set('spark.sql.execution.pythonUDF.arrow.enabled', 'false'), or "
            "udf(…, useArrow=False); or install server-config/requirements.txt in the server's Python."), out
        repl.run("spark.conf.set('spark.sql.execution.pythonUDF.arrow.enabled', 'false')")
        again = repl.run('spark.range(3).select(F.udf(lambda x: x + 1, "long")("id").alias("n")).collect()')
        assert "[Row(n=1), Row(n=2), Row(n=3)]" in again, again
    else:
        assert re.fullmatch(r"error: The server's Python is (3\.\d+) and this client's is (3\.\d+): Python code "
                            r"sent to the server \(UDFs, foreachBatch, Python data sources\) needs the same minor "
                            r"version on both sides\. Run this client with Python \1, or use a server whose Python "
                            r"is \2 \(docs/clusters\.md\)\.", out.strip().splitlines()[-1]), out
    assert WORKER_FAILED not in out


def test_the_stream_test_of_docs_testing_passes_on_this_server(remote_url, tmp_path):
    """The test docs/testing.md writes (seed 002's late mobile event fed in three batches), run by pytest with the
    plugin's --sparkscope-remote: on a bare server too, the memory source needs no Python there."""
    import subprocess
    import sys
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()
    block = next(code for code in re.findall(r"```python\n(.*?)```", page, re.S) if "def test_" in code)
    (tmp_path / "test_from_the_docs.py").write_text(block)
    ran = subprocess.run([sys.executable, "-m", "pytest", "test_from_the_docs.py", "-q", "-p", "no:cacheprovider",
                          "--sparkscope-remote", remote_url], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-2000:]


def test_a_hand_written_foreach_batch_names_what_the_server_s_python_lacks(repl, kind):
    repl.run('ticks = spark.readStream.format("rate").option("rowsPerSecond", 5).load()')
    cell = "q = ticks.writeStream.foreachBatch(lambda df, batch: None).start()"
    first = repl.run(cell, timeout=120)
    if kind == "spark-4.0":  # its Python has what Connect's foreachBatch worker imports
        assert "error" not in first, first
    else:  # the first time after Spark's own wait for the worker, then at once: what the probe found, both times
        problem = {"bare": re.escape("the server's Python lacks pandas, pyarrow"), "other-python": OTHER_MINOR}[kind]
        assert re.search(problem, first) and WORKER_FAILED not in first, first
        again = repl.run(cell)
        assert re.search(r"error: foreachBatch runs Python on the server, and this server cannot: " + problem,
                         again), again
    repl.run(":stop --all")
