"""Every feature on a server that is not sparkscope's own: the result, or one line naming what the server lacks.

Each test runs twice (tests/servers/conftest.py): against a bare server, whose Python has no pandas or pyarrow
(the official image's), and against Spark 4.0 with server-config/requirements.txt in its Python. Nothing a user
types may end in `Python worker failed to connect back`.
"""

from __future__ import annotations

import re
import uuid

from tests.e2e.conftest import Screen
from tests.e2e.test_readme import test_the_first_session_runs_as_written, test_the_sdk_example_runs_as_written
from tests.helpers import run_sparkscope, wait_for

__all__ = ["test_the_first_session_runs_as_written", "test_the_sdk_example_runs_as_written"]  # run here too

WORKER_FAILED = "connect back"
FALLBACK_NOTE = ("note: Spark's memory sink, not the bounded sink: the server's Python lacks pandas, pyarrow, grpcio, "
                 "grpcio-status, googleapis-common-protos, zstandard, which Connect's foreachBatch worker imports.")


def _rows_of(repl, command: str, pattern: str, what: str) -> str:
    """Run `command` until its output matches `pattern` (a query's first batches take a while)."""
    box: dict[str, str] = {}

    def shown() -> bool:
        box["out"] = repl.run(command)
        return re.search(pattern, box["out"]) is not None

    wait_for(shown, timeout=120, every=0.5, what=what)
    return box["out"]


def test_server_check_names_exactly_what_is_missing_and_exits_non_zero(remote_url, bare):
    done = run_sparkscope("server", "check", "--remote", remote_url, timeout=180)
    out = done.stdout
    assert re.search(r"\| python +\| ok +\| 3\.\d+\.\d+ ", out), out
    if bare:
        assert done.returncode == 1, out + done.stderr
        assert re.search(r"\| foreachBatch +\| MISSING +\| missing pandas, pyarrow, grpcio, grpcio-status, "
                         r"googleapis-common-protos, zstandard +\|", out), out
        assert re.search(r"\| kafka +\| MISSING +\| none: no spark-sql-kafka connector, and no pyarrow, "
                         r"confluent-kafka for sparkscope's own", out), out
        assert re.search(r"\| checkpoints +\| MISSING +\| no spark\.sql\.streaming\.checkpointLocation", out), out
        assert "Missing: foreachBatch, kafka, checkpoints." in out
    else:
        assert done.returncode == 0, out + done.stderr
        assert re.search(r"\| spark +\| ok +\| 4\.0\.\d+ at sc://localhost:\d+", out), out
        assert re.search(r"\| kafka +\| ok +\| sparkscope's own source and sink", out), out
        assert "Everything sparkscope uses works on this server." in out
    assert WORKER_FAILED not in out + done.stderr


def test_start_peek_progress_watch_and_stop_an_append_stream(repl, bare):
    repl.run('ticks = spark.readStream.format("rate").option("rowsPerSecond", 10).load()')
    out = repl.run(":start ticks")
    if bare:
        assert re.search(r"Started ticks \(id [0-9a-f]{8}\) → memory sink, append mode", out), out
        assert FALLBACK_NOTE in out, out
        assert "note: no checkpoint: the server has no spark.sql.streaming.checkpointLocation, so :restart and " \
               ":state cannot work for this query" in out, out
        assert "warning:" not in out  # the note says what the memory sink keeps; no second line says it again
    else:
        assert re.search(r"Started ticks \(id [0-9a-f]{8}\) → bounded sink \([^)]*\), append mode", out), out
        assert "note:" not in out, out
    _rows_of(repl, ":peek ticks", r"\|\s*\S+ \S+\s*\|\s*\d+\s*\|", "rows in ticks")
    _rows_of(repl, ":progress ticks", r"\| ticks\s+\| \d+", "a batch of ticks")
    repl.child.send(":watch\r")
    screen = Screen(repl.child)
    screen.wait_for(lambda text: "sparkscope :watch" in text and "ticks" in text, what="the dashboard")
    repl.child.send("q")
    repl.prompt()
    again = repl.run(":start ticks2 ticks")
    assert "→ memory sink" in again if bare else "→ bounded sink" in again
    assert "note:" not in again  # said once per session
    assert repl.run(":stop ticks").strip().endswith("Stopped ticks")
    if bare:  # a sink the user asked for by name is not replaced: one line says why it cannot run
        out = repl.run(":start kept ticks --keep 100")
        assert out.strip().splitlines()[-1].startswith(
            "error: The bounded sink runs Python on the server, and this server cannot: the server's Python lacks "
            "pandas"), out
    session = repl.run(":session")
    assert re.search(r"\| server +\| Spark 4\.\d+\.\d+, Python 3\.\d+\.\d+; " +
                     ("missing: foreachBatch, kafka, checkpoints \\(:server\\)" if bare
                      else "everything sparkscope uses works"), session), session
    assert WORKER_FAILED not in out + again + session
    repl.run(":stop --all")


def test_display_of_a_stream_and_a_console_sink_print_their_batches(repl, data_dir):
    repl.child.send('display(spark.readStream.format("rate").option("rowsPerSecond", 2).load(), '
                    'streamName="shown")\r')
    repl.child.expect(r"display: started shown \(:stop shown ends it\)", timeout=90)
    repl.child.expect(r"Batch: \d+ \(shown\)[\s\S]*?new rows\)", timeout=90)
    repl.child.sendintr()
    assert "Stopped waiting for shown; it keeps running (:stop shown ends it)." in repl.prompt()
    (data_dir / "1.json").write_text('{"word": "spark"}\n{"word": "connect"}\n')
    repl.run(f'words = spark.readStream.schema("word string").json("{data_dir}")')
    repl.child.send('q = words.writeStream.format("console").start()\r')
    text = repl.expect(r"Batch: 0 \(console_\d+\)[\s\S]*?new rows\)", timeout=90)
    assert "spark" in text and "connect" in text, text
    repl.prompt()
    repl.run(":stop --all")


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


def test_kafka_reads_through_what_the_server_has_or_says_what_it_lacks(repl, kafka_broker, bare):
    topic = f"servers_{uuid.uuid4().hex[:6]}"
    kafka_broker.create(topic, 1)
    kafka_broker.produce(topic, ["a", "b", "c"])
    out = repl.run(f'clicks = spark.readStream.format("kafka").option("kafka.bootstrap.servers", '
                   f'"{kafka_broker.bootstrap}").option("subscribe", "{topic}")'
                   '.option("startingOffsets", "earliest").load()')
    if bare:  # the line that names the source says it: nothing was defined
        lines = [line for line in out.strip().splitlines() if line.startswith("error:")]
        assert lines == ["error: This server cannot read or write Kafka: it has no spark-sql-kafka connector, and "
                         "for sparkscope's own source the server's Python lacks pyarrow, confluent-kafka. Add "
                         "confluent-kafka and pyarrow to the server's Python (pip install -r "
                         "server-config/requirements.txt), or start the server with Spark's connector (--packages "
                         "org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0)."], out
    else:
        out += repl.run(":start clicks clicks.selectExpr('CAST(value AS STRING) AS v')")
        assert ("note: Kafka through sparkscope's own source and sink (no spark-sql-kafka connector on the server); "
                "Spark before 4.3 gives a Python source no admission control, so each batch reads all that is there "
                "and maxOffsetsPerTrigger is not applied") in out, out
        peek = _rows_of(repl, ":peek clicks", r"\|\s*c\s*\|", "the three records")
        assert {"a", "b", "c"} <= set(re.findall(r"^\|\s*([abc])\s*\|", peek, re.M)), peek
    assert WORKER_FAILED not in out
    repl.run(":stop --all")
