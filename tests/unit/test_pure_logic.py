"""Fast tests of pure logic: URLs, profiles, triggers, output modes, progress, commands, rendering."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from sparkscope.client.errors import ConfigError, UnsupportedOperation, translate
from sparkscope.client.paths import for_server
from sparkscope.client.planning import PlanShape, choose_mode, parse_trigger, plan_shape, watermark_warning
from sparkscope.client.progress import Progress
from sparkscope.client.remote import parse_url, redact, resolve
from sparkscope.repl.command_list import REGISTRY
from sparkscope.repl.registry import UsageError, split_commands
from sparkscope.repl.render import cell, render_table, render_vertical, to_json
from sparkscope.repl.results import Table
from sparkscope.repl.statements import enter_submits, is_complete, script_statements


def test_parse_url_with_params_token_and_session():
    t = parse_url("sc://h.example:443/;use_ssl=true;token=abc;session_id=0b8a0c56-8f5e-4c8a-9d5c-7d3f2b9c1e00")
    assert (t.host, t.port, t.use_ssl, t.token) == ("h.example", 443, True, "abc")
    assert t.display == "sc://h.example:443/;use_ssl=true;session_id=0b8a0c56-8f5e-4c8a-9d5c-7d3f2b9c1e00;token=***"
    assert "abc" not in repr(t)
    assert parse_url("sc://localhost").port == 15002


@pytest.mark.parametrize("bad,message", [
    ("http://x:1", "is not a Spark Connect URL"), ("sc://x:port", "'port' is not a valid port"),
    ("sc://", "has no host"), ("sc://x:1/;session_id=nope", "'nope' is not a session id"),
    ("sc://x:1/;junk", "Bad parameter 'junk'"),
])
def test_parse_url_errors(bad, message):
    with pytest.raises(ConfigError, match=message):
        parse_url(bad)


def test_relative_paths_are_made_absolute_only_for_a_server_on_this_machine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_url("sc://localhost:1").on_this_machine and parse_url("sc://127.0.0.1:1").on_this_machine
    assert not parse_url("sc://spark.example:1").on_this_machine
    assert for_server("data/events", True) == str(tmp_path / "data" / "events")
    assert for_server("data/events", False) == "data/events"
    for unchanged in ("/abs/dir", "s3a://bucket/key", "file:/tmp/x", "hdfs://nn/x"):
        assert for_server(unchanged, True) == unchanged


def test_redact_hides_tokens_everywhere():
    assert redact("sc://h:1/;token=abc;x=1") == "sc://h:1/;token=***;x=1"
    assert redact(":connect sc://h/;TOKEN=zz") == ":connect sc://h/;TOKEN=***"


def test_precedence_flag_env_profile_local(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('default_profile = "dev"\n[profiles.dev]\nremote = "sc://prof:3"\ntoken_env = "DEV_TOKEN"\n')
    env = {"SPARK_REMOTE": "sc://env:2", "DEV_TOKEN": "t0k"}
    assert resolve("sc://flag:1", env=env, config_path=config).host == "flag"
    assert resolve(None, env=env, config_path=config).source == "env"
    picked = resolve(None, env={"DEV_TOKEN": "t0k"}, config_path=config)
    assert (picked.host, picked.source, picked.token) == ("prof", "profile", "t0k")
    assert resolve(None, env={}, config_path=tmp_path / "missing.toml") is None
    assert resolve("sc://f:1", env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": "e"}, config_path=config).token == "e"


def test_profile_with_token_must_be_private(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[profiles.p]\nremote = "sc://h:1"\ntoken = "secret"\n')
    os.chmod(config, 0o644)
    with pytest.raises(ConfigError, match="holds a token but other users can read it"):
        resolve(None, profile="p", env={}, config_path=config)
    os.chmod(config, 0o600)
    assert resolve(None, profile="p", env={}, config_path=config).token == "secret"


@pytest.mark.parametrize("text,expected", [
    (None, "default"), ("5s", "5 seconds"), ("500ms", "500 milliseconds"), ("1 minute", "1 minutes"),
    ("once", "once"), ("available-now", "available-now"), ("continuous:1s", "continuous:1 seconds"),
])
def test_triggers(text, expected):
    assert str(parse_trigger(text)) == expected


def test_bad_trigger():
    with pytest.raises(ConfigError, match="'soon' is not a trigger"):
        parse_trigger("soon")


AGG = PlanShape(aggregation=True)
AGG_WM = PlanShape(aggregation=True, watermark_before_aggregation=True)


@pytest.mark.parametrize("shape,sink,mode,expected", [
    (PlanShape(), "memory", None, "append"), (AGG, "memory", None, "complete"), (AGG, "console", None, "complete"),
    (AGG_WM, "parquet", None, "append"), (AGG, "memory", "update", "update"),
    (PlanShape(stateful_function=True), "memory", None, "update"),
    (PlanShape(stateful_function=True, declared_mode="append"), "memory", None, "append"),
])
def test_output_mode_inference(shape, sink, mode, expected):
    assert choose_mode(shape, sink, mode) == expected


@pytest.mark.parametrize("shape,sink,mode,message", [
    (AGG, "json", "complete", "A json sink only takes append mode, not complete"),
    (AGG, "parquet", None, "cannot be appended"), (AGG, "memory", "append", "needs a watermark"),
    (PlanShape(), "memory", "complete", "needs a streaming aggregation"),
])
def test_output_mode_rejections(shape, sink, mode, message):
    with pytest.raises(UnsupportedOperation, match=message):
        choose_mode(shape, sink, mode)


def test_plan_shape_reads_the_analyzed_section():
    explain = """== Parsed Logical Plan ==
'Aggregate ['x]
== Analyzed Logical Plan ==
window: struct<start:timestamp,end:timestamp>, count: bigint
~EventTimeWatermark 1, window#1, 5 minutes
+- ~Aggregate [window#1], [count(1)]
   +- ~StreamingRelationV2 rate
== Optimized Logical Plan ==
Aggregate"""
    shape = plan_shape(explain)
    assert shape.aggregation and shape.watermark_after_aggregation and not shape.watermark_before_aggregation
    assert "after the aggregation" in watermark_warning(shape)


@pytest.mark.parametrize("node,declared", [
    ("~FlatMapGroupsInPandasWithState f(k#22L)#31, [k#22L], [k#32L, n#33L], [StructField(n,LongType,true)], "
     "Append, NoTimeout", "append"),
    ("~TransformWithStateInPySpark transformWithStateUDF(k#1L)#4, 1, [k#5L, n#6L], Update, NoTime, pandas, false, 0",
     "update"),
])
def test_plan_shape_reads_the_mode_a_stateful_function_declares(node, declared):
    shape = plan_shape(f"{node}\n+- ~Project [(value#1L % 3) AS k#22L]\n   +- ~StreamingRelationV2 rate")
    assert shape.stateful_function and shape.declared_mode == declared
    assert choose_mode(shape, "memory", None) == declared


PROGRESS = {"id": "q1", "runId": "r1", "name": "counts", "timestamp": "2024-01-01T00:00:00.000Z", "batchId": 7,
            "numInputRows": 10, "inputRowsPerSecond": "NaN", "processedRowsPerSecond": 20.5,
            "durationMs": {"triggerExecution": 120, "addBatch": 80},
            "eventTime": {"watermark": "2024-01-01T00:00:00.000Z"},
            "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 4, "numRowsUpdated": 2,
                                "memoryUsedBytes": 100, "numRowsDroppedByWatermark": 3}],
            "sources": [{"description": "RateStream", "numInputRows": 10, "inputRowsPerSecond": 1.0,
                         "processedRowsPerSecond": 2.0}], "sink": {"description": "MemorySink"}}


def test_progress_model():
    p = Progress.from_json(json.dumps(PROGRESS))
    assert (p.batch_id, p.input_rows, p.input_rows_per_second, p.processed_rows_per_second) == (7, 10, 0.0, 20.5)
    assert (p.batch_duration_ms, p.durations_ms["addBatch"], p.state_rows, p.dropped_by_watermark) == (120, 80, 4, 3)
    assert p.sink == "MemorySink" and p.sources[0].description == "RateStream"


def test_command_parsing_keeps_expressions_whole():
    inv = REGISTRY.parse(':start counts spark.sql("select 1 as x") --sink memory --option a=b --option c=d')
    assert inv.args == ["counts", 'spark.sql("select 1 as x")']
    assert inv.opts == {"sink": "memory", "option": ["a=b", "c=d"]}
    assert REGISTRY.parse(":sql SELECT 1 -- comment").args == ["SELECT 1 -- comment"]
    assert REGISTRY.parse(":ls").command.name == "queries"


@pytest.mark.parametrize("line,message", [
    (":pek x", "Did you mean :peek?"), (":stop a b", "Too many arguments"), (":peek", "needs more arguments"),
    (":peek x --nope", "Unknown option --nope"), (":progress --last", "--last needs a value"),
    (":start x 'unclosed", "Unclosed quote"),
    (":produce t1 x --key --bootstrap H:P", "--key needs a value before --bootstrap"),
])
def test_command_parse_errors(line, message):
    with pytest.raises(UsageError, match=message):
        REGISTRY.parse(line)


def test_an_option_value_may_start_with_two_dashes_when_no_option_has_that_name():
    assert REGISTRY.parse(":produce t1 x --key --not-an-option").opts == {"key": "--not-an-option"}


def test_split_commands():
    assert split_commands(":start counts; :progress\nx = 1; y = 2") == [":start counts", ":progress", "x = 1; y = 2"]


def test_every_command_has_usage_and_summary():
    for cmd in REGISTRY.commands.values():
        assert cmd.usage.startswith(":" + cmd.name) and cmd.summary


def test_rendering():
    ts = dt.datetime(2018, 3, 2, 10, 10)
    table = Table(["window", "action", "count"], [[{"start": ts, "end": ts}, "open", 2], [None, "x" * 300, 1]])
    text = render_table(table, width=80)
    assert "{2018-03-02 10:10:00, 2018-03-02 10:10:00}" in render_table(table, width=400)
    assert "NULL" in text and "…" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "(2 rows)" in text
    assert "-[ RECORD 1 ]" in render_vertical(table)
    assert json.loads(to_json("peek", table))["rows"][0]["action"] == "open"
    assert cell(1.5) == "1.5"


def test_python_completeness():
    assert not is_complete("def f(x):")
    assert not is_complete("foo(1,")
    assert is_complete("x = 1")
    assert is_complete(":start counts")


def test_translate_keeps_one_line_and_the_error_class():
    class AnalysisException(Exception):
        def getCondition(self):
            return "TABLE_OR_VIEW_NOT_FOUND"

    err = translate(AnalysisException("[TABLE_OR_VIEW_NOT_FOUND] The table `t` cannot be found. SQLSTATE: 42P01\nJVM"))
    assert str(err) == ("The table `t` cannot be found. Check the name with spark.sql('SHOW TABLES'), or start the "
                        "query that creates it.")
    assert err.error_class == "TABLE_OR_VIEW_NOT_FOUND" and err.code == "table_not_found"
    from sparkscope.repl.render import error_line

    assert error_line(err) == ("error: The table `t` cannot be found. Check the name with :sql SHOW TABLES, or start "
                               "the query that creates it.")


def test_translate_leaves_out_the_java_class_pyspark_puts_first():
    """spark.read.format('nope').load(): the server's SparkClassNotFoundException has no pyspark class, so
    pyspark's message starts with the Java class's name in brackets; the one line starts with what went wrong."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    exc = SparkConnectGrpcException(
        "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: nope. Make sure the provider name is correct. "
        "SQLSTATE: 42K02", errorClass="DATA_SOURCE_NOT_FOUND", reason="org.apache.spark.SparkClassNotFoundException")
    assert str(exc).startswith("(org.apache.spark.SparkClassNotFoundException) [DATA_SOURCE_NOT_FOUND]")
    err = translate(exc)
    assert err.message == "Failed to find the data source: nope. Make sure the provider name is correct"
    assert err.error_class == "DATA_SOURCE_NOT_FOUND"


def test_every_repl_hint_names_a_code_the_client_raises():
    """The REPL's hints are keyed by the client's error codes: a renamed code must not orphan its hint."""
    import re
    from pathlib import Path

    from sparkscope.repl.hints import REPL_HINTS

    client = "\n".join(p.read_text() for p in (Path(__file__).parents[2] / "sparkscope" / "client").glob("*.py"))
    raised = set(re.findall(r'code\s*=\s*"([a-z_]+)"', client)) | set(re.findall(r'\("([a-z_]+)", "', client))
    assert set(REPL_HINTS) - raised == set()


def test_the_sdk_speaks_python_and_the_repl_speaks_commands():
    from sparkscope.client.errors import ConfigError
    from sparkscope.repl.render import error_line

    err = ConfigError("A query named 'c' is already running", "Stop it first (ss.query('c').stop())",
                      code="query_exists", data={"name": "c"})
    assert str(err) == "A query named 'c' is already running. Stop it first (ss.query('c').stop())."
    assert error_line(err) == "error: A query named 'c' is already running. Stop it first (:stop c) or pick another name."


def _commands():
    return REGISTRY, list(REGISTRY.commands.values())


def test_every_option_of_every_command_completes():
    from sparkscope.repl.completion import command_candidates
    from sparkscope.repl.registry import Kind

    registry, declared = _commands()
    for cmd in declared:
        for option in cmd.options:
            assert command_candidates(cmd, [], "--" + option.name[:1], list, list).count("--" + option.name) == 1
            for choice in option.choices if option.kind is not Kind.FLAG else ():
                assert choice in command_candidates(cmd, ["--" + option.name], "", list, list), (cmd.name, choice)


def test_usage_is_generated_from_what_the_parser_accepts():
    registry, _ = _commands()
    assert registry.usage("stop") == ":stop [NAME] [--all]"
    assert registry.usage("start") == (
        ":start NAME [EXPR] [--sink bounded|memory|console|table|kafka|parquet|json|csv|orc|text] [--keep N|TIME] "
        "[--path P] [--table T] "
        "[--mode append|update|complete] [--trigger 5s|once|available-now|continuous:1s] [--checkpoint P] "
        "[--option k=v]…")
    assert registry.usage("watch") == ":watch [NAME…]"
    assert registry.usage("alerts") == ":alerts [on|off]"


def test_arguments_complete_what_the_registry_declares():
    from sparkscope.repl.completion import command_candidates

    registry, _ = _commands()

    def offer(line_words, current, name):
        return command_candidates(registry.lookup(name), line_words, current, lambda: ["counts", "clicks"],
                                  lambda: ["events", "counts_df"])

    assert offer([], "c", "peek") == ["counts", "clicks"]
    assert offer(["counts"], "", "peek") == []  # N is not completed
    assert offer([], "", "start") == ["events", "counts_df"]
    assert offer([], "c", "explain") == ["counts", "clicks", "counts_df"]
    assert offer(["--sink"], "p", "start") == ["parquet"]
    assert offer([], "--sink=j", "start") == ["--sink=json"]
    assert offer(["--limit", "5"], "c", "tail") == ["counts", "clicks"]  # an option's value is not an argument
    assert offer([], "k", "help") == ["keys"]
    assert offer(["vi"], "o", "set") == ["on", "off"]


def test_a_script_keeps_a_blank_line_inside_a_def():
    script = ("def double(x):\n    y = x * 2\n\n    return y\n\nprint(double(2))\n"
              "df = (spark.range(3)\n.filter('id > 0'))\n:queries; :progress\nfor i in range(2):\n    pass\nelse:\n"
              "    pass\n# a comment\nx = 1")
    assert list(script_statements(script)) == [
        "def double(x):\n    y = x * 2\n\n    return y\n", "print(double(2))",
        "df = (spark.range(3)\n.filter('id > 0'))\n", ":queries; :progress",
        "for i in range(2):\n    pass\nelse:\n    pass\n# a comment\n", "x = 1"]
    for piece in script_statements(script):
        if not piece.startswith(":"):
            compile(piece, "<script>", "exec")  # each piece runs on its own: no "unexpected indent"


def test_enter_at_the_prompt_follows_the_interpreter():
    assert enter_submits("x = 1") and enter_submits(":start counts")
    assert not enter_submits("def f(x):")
    assert not enter_submits("def f(x):\n    return x")  # a block ends with a blank line
    assert enter_submits("def f(x):\n    return x\n")
    assert not enter_submits("foo(1,\n")  # an open bracket continues past a blank line
    assert enter_submits("foo(1,\n2)")


def test_a_pasted_complete_cell_runs_on_one_enter_as_in_ipython():
    # seed cells: a backslash chain, and the inside of a bracket block, each ending on an indented line
    chain = ('query = df.writeStream \\\n    .format("memory") \\\n    .queryName("counts") \\\n'
             '    .start()')
    assert enter_submits(chain)
    assert enter_submits('q = (df.writeStream\n     .format("console")\n     .start())')
    assert enter_submits('rows = [\n    (1, "a"),\n    (2, "b"),\n    ]')
    # a compound statement still waits for its blank line, however it ends
    assert not enter_submits("for x in range(3):\n    print(x)")
    assert not enter_submits('with open("f") as f:\n    q = (df\n        .start())')
    assert not enter_submits("def f(x):\n    return (x +\n        1)")
    # a compound statement followed by an unindented one is a complete cell
    assert enter_submits("for x in range(3):\n    pass\nprint(1)")
    assert not enter_submits("q = (df\n    .start(")  # still open


def test_a_sql_syntax_error_loses_spark_position_noise():
    class ParseException(Exception):
        def getCondition(self):
            return "PARSE_SYNTAX_ERROR"

    err = translate(ParseException("[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'. SQLSTATE: 42601 (line 1, pos 0)"))
    assert str(err) == "Syntax error at or near 'SELEC'. Check the SQL or DDL syntax."


@pytest.mark.parametrize("text, seconds", [("24h", 86400.0), ("60m", 3600.0), ("5min", 300.0), ("300s", 300.0),
                                           ("90000", 90.0), ("1d", 86400.0), ("soon", None), ("", None)])
def test_spark_durations_as_the_session_timeout_is_written(text, seconds):
    from sparkscope.client.durable import spark_duration

    assert spark_duration(text) == seconds


@pytest.mark.parametrize("ram_gib, heap", [(2, "1g"), (8, "2g"), (24, "6g"), (64, "8g"), (6, "1536m")])
def test_the_embedded_servers_heap_is_a_quarter_of_the_ram_within_bounds(ram_gib, heap):
    from sparkscope.server.sizing import default_driver_memory

    assert default_driver_memory(ram_gib * 2**30) == heap


def test_a_bad_driver_memory_is_one_line():
    from sparkscope.client.errors import ServerError
    from sparkscope.server.sizing import check_memory

    assert check_memory("4G") == "4g"
    with pytest.raises(ServerError) as err:
        check_memory("lots")
    assert str(err.value) == "'lots' is not a memory size. Write a number and a unit, e.g. 4g or 512m."


@pytest.mark.parametrize("text, shown, spec", [
    (None, "last 10,000 rows", "10000"),
    ("500", "last 500 rows", "500"),
    ("50k", "last 50,000 rows", "50000"),
    ("5000 rows", "last 5,000 rows", "5000"),
    ("10m", "last 10 min", "600s,1000000"),
    ("1h", "last 1 h", "3600s,1000000"),
    ("10m,50000", "last 10 min, at most 50,000 rows", "600s,50000"),
])
def test_what_the_bounded_sink_keeps(text, shown, spec):
    from sparkscope.client.planning import parse_keep

    retention = parse_keep(text)
    assert (str(retention), retention.spec()) == (shown, spec)
    assert parse_keep(retention.spec()) == retention  # what the catalog stores reads back the same


@pytest.mark.parametrize("text, message", [
    ("x", "'x' is not what to keep. Write a row count (10000, 50k) or a time (10m, 1h), or both: 10m,50000."),
    ("0", "'0' is not what to keep. Write a row count (10000, 50k) or a time (10m, 1h), or both: 10m,50000."),
    ("5,6", "'5,6' is not what to keep. Write a row count (10000, 50k) or a time (10m, 1h), or both: 10m,50000."),
    ("2M", "Keeping 2,000,000 rows is more than the bounded sink holds (1,000,000). Write that many rows to a "
           "file sink, or to Spark's memory sink."),
])
def test_what_to_keep_is_checked(text, message):
    from sparkscope.client.planning import parse_keep

    with pytest.raises(ConfigError) as err:
        parse_keep(text)
    assert str(err.value) == message


def test_the_default_sink_is_bounded_unless_a_complete_result_replaces_itself():
    from sparkscope.client.planning import default_sink, memory_sink_warning

    processing, continuous = parse_trigger("1s"), parse_trigger("continuous:1s")
    assert [default_sink(mode, processing) for mode in ("append", "update", "complete")] == [
        "bounded", "bounded", "memory"]
    assert default_sink("append", continuous) == "memory"  # continuous processing has no foreachBatch
    assert memory_sink_warning("memory", "append", processing) == (
        "Spark's memory sink keeps every row of this append-mode stream in the server's memory: reading it slows "
        "as it grows, and the server can run out of memory (the default sink keeps the newest 10,000 rows)")
    assert memory_sink_warning("memory", "append", continuous).endswith(
        "(continuous processing cannot use the bounded sink; stop it when you have seen enough)")
    assert memory_sink_warning("memory", "complete", processing) is None
    assert memory_sink_warning("bounded", "append", processing) is None


FOREACH_BATCH_FAILURE = """(STREAM_FAILED) [PYTHON_EXCEPTION] [session: 8567da67] [userId: ] Found error inside \
foreachBatch Python process: Traceback (most recent call last):
  File "/x/foreach_batch_worker.py", line 72, in process
  File "/x/sparkscope/client/bounded_sink.py", line 52, in __call__
    new = batch_df.limit(self.rows).toArrow()
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/x/pyspark/sql/connect/client/core.py", line 2443, in _handle_rpc_error
    raise convert_exception(
pyspark.errors.exceptions.connect.SparkRuntimeException: [USER_RAISED_EXCEPTION] '(value < 3)' is not true! \
SQLSTATE: P0001

JVM stacktrace:
org.apache.spark.SparkRuntimeException
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.raiseError(QueryExecutionErrors.scala:3082)
"""


def test_a_failure_inside_foreach_batch_is_summarised_by_the_python_exception_it_raised():
    from sparkscope.client.query import summarise_error

    assert summarise_error(FOREACH_BATCH_FAILURE) == "'(value < 3)' is not true!"
    own = FOREACH_BATCH_FAILURE.replace(
        "pyspark.errors.exceptions.connect.SparkRuntimeException: [USER_RAISED_EXCEPTION] '(value < 3)' is not "
        "true! SQLSTATE: P0001", "ValueError: the sensor id is missing")
    assert summarise_error(own) == "ValueError: the sensor id is missing"


def test_the_start_up_stage_comes_from_the_server_log():
    from sparkscope.server.log_file import startup_stage

    assert startup_stage([]) == "starting Java"
    begun = ["26/11/22 18:33:00 INFO SparkConnectServer: Starting Spark session."]
    assert startup_stage(begun) == "starting the Spark session"
    assert startup_stage(begun + ["26/11/22 18:33:04 INFO SparkConnectServer: Spark Connect server started at: "
                                  "127.0.0.1:34155"]) == "opening a session"


def test_a_free_server_port_is_outside_the_ephemeral_range_and_free():
    """A server restarted on its port after a crash found it taken by another client's outgoing
    connection (its source port, handed out from the ephemeral range) in the meantime."""
    import socket
    from pathlib import Path

    from sparkscope.server.processes import free_port

    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = free_port()
        assert 20000 <= port < max(ephemeral_low, 21000)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_query_name_in_use_says_which_and_what_to_do():
    from sparkscope.client.errors import translate
    from sparkscope.repl.render import error_line

    class IllegalArgumentException(Exception):
        pass

    error = translate(IllegalArgumentException(
        "Cannot start query with name counts as a query with that name is already active in this SparkSession"))
    assert error.code == "query_exists" and error.data == {"name": "counts"}
    assert error.hint == "Stop it first (ss.query('counts').stop()) or pick another queryName"
    assert error_line(error) == ("error: Cannot start query with name counts as a query with that name is already "
                                 "active in this SparkSession. Stop it first (:stop counts) or pick another name.")


def test_what_follows_a_script_is_the_scripts_own_argv():
    from sparkscope.repl.cli_args import split_script_args

    assert split_script_args(["-f", "job.py", "localhost", "9999"]) == (["-f", "job.py"], ["localhost", "9999"])
    assert split_script_args(["--remote", "sc://h:1", "job.py", "-f", "x"]) == (
        ["--remote", "sc://h:1", "-f", "job.py"], ["-f", "x"])  # the script's own flags are its own
    assert split_script_args(["-fjob.sps", "a"]) == (["-fjob.sps"], ["a"])
    assert split_script_args(["-c", "print('x.py')", "--detach"]) == (["-c", "print('x.py')", "--detach"], [])
    assert split_script_args(["server", "start", "--port", "1"]) == (["server", "start", "--port", "1"], [])


def test_a_failure_inside_a_python_data_source_is_summarised_by_its_exception():
    from sparkscope.client.query import summarise_error

    text = ("[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source perform "
            "latestOffset: Traceback (most recent call last):\n  File \"<string>\", line 3, in latestOffset\n"
            "sparkscope.client.kafka.source.KafkaDataLossError: Some data may have been lost: partition t-0 is gone\n"
            "\nJVM stacktrace:\norg.apache.spark.SparkException: boom\n\tat x.y(Z.scala:1)\n")
    assert summarise_error(text) == "KafkaDataLossError: Some data may have been lost: partition t-0 is gone"


def test_highlighting_tells_a_colon_command_from_python():
    from pygments.token import Keyword, Name, String

    from sparkscope.repl.highlighting import SparkscopeLexer

    tokens = list(SparkscopeLexer().get_tokens(":start counts --sink memory"))
    assert (Keyword, ":start") in tokens and (Name.Attribute, "--sink") in tokens
    python = list(SparkscopeLexer().get_tokens("counts = spark.readStream.format('rate').load()"))
    assert (Name, "counts") in python and (String.Single, "rate") in python


@pytest.mark.parametrize("argv, subcommand", [
    (["--remote", "sc://spark.example:15002"], None),
    (["-c", "1", "--format", "json"], None),
    (["server", "status", "--format", "json"], "server"),
    (["--port", "15010", "checkpoints"], "checkpoints"),
])
def test_the_command_line_builds_the_subcommands_only_when_named(argv, subcommand):
    from sparkscope.repl.cli_args import build_parser

    args = build_parser(argv).parse_args(argv)
    assert args.subcommand == subcommand


def test_a_mistyped_subcommand_still_lists_the_real_ones(capsys):
    from sparkscope.repl.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["serve"])
    assert exit_.value.code == 2
    assert "invalid choice: 'serve' (choose from 'checkpoints', 'server')" in capsys.readouterr().err


def test_output_into_a_pipe_closed_early_ends_quietly():
    """`sparkscope server logs | head -1`: the reader has gone, so the command ends as `cat` would, without
    a BrokenPipeError traceback (the real command, its stdout a pipe whose read end is closed)."""
    import subprocess

    from tests.helpers import sparkscope_bin

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sparkscope_bin(), "--version"], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_wait_until_free_says_whether_a_port_was_let_go():
    import socket

    from sparkscope.server.processes import wait_until_free

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    assert wait_until_free(port, timeout=0.2) is False  # still held: it says so after the timeout
    holder.close()
    assert wait_until_free(port, timeout=5) is True
