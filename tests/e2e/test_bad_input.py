"""Bad input in the REPL: one clear line each, no traceback, and the prompt (and queries) live on."""

from __future__ import annotations

import re

import pexpect

from tests.e2e.conftest import Repl, clean, spawn

CASES = [
    (":pek counts", "error: Unknown command :pek. Did you mean :peek? Type :help for the list."),
    (":frobnicate", "error: Unknown command :frobnicate. Type :help for the list."),
    (":start", "error: :start needs more arguments. Usage: :start NAME [EXPR]"),
    (":peek", "error: :peek needs more arguments. Usage: :peek NAME [N]"),
    (":stop alive extra", "error: Too many arguments for :stop: extra. Usage: :stop [NAME] [--all]."),
    (":peek nosuch", "error: No query or table named 'nosuch'. List them with :queries, or start one with :start."),
    (":stop ghost", "error: No query named 'ghost'. Queries in this session: alive."),
    (":progress ghost", "error: No query named 'ghost'. Queries in this session: alive."),
    (":start b batch", "error: This is a batch DataFrame, not a streaming one. Build it from spark.readStream "
                       "or ss.source.*."),
    (":start alive r", "error: A query named 'alive' is already running. Stop it first (:stop alive) or pick "
                     "another name."),
    (":start x r --mode sometimes", "error: 'sometimes' is not an output mode. Use append, update or complete."),
    (":start x r --trigger fast", "error: 'fast' is not a trigger. Use an interval (5s, 1 minute), once, "
                                  "available-now, continuous:1s or realtime (realtime:10s)."),
    (":start x r --sink kafka2", "error: 'kafka2' is not a sink. Use one of: bounded, memory, console, table, "
                                 "foreach_batch, kafka, parquet, json, csv, orc, text."),
    (":start x r --keep lots", "error: 'lots' is not what to keep. Write a row count (10000, 50k) or a time "
                               "(10m, 1h), or both: 10m,50000."),
    (":start x r --sink memory --keep 10", "error: Only the bounded sink takes keep, not the memory sink. "
                                           "Leave out --sink (the default sink keeps what --keep says), or "
                                           "--keep."),
    (":start x r --sink memory --grace 5m", "error: Only the bounded sink takes grace, not the memory sink. "
                                            "Leave out --sink (the default sink keeps its rows --grace after the "
                                            "query), or --grace."),
    (":start x r --grace soon", "error: 'soon' is not a grace period. Write it like 30s, 15m, 2h or 2d (at most 7 "
                                "days), or 0 to free the rows as soon as the query ends."),
    (":start x r --grace 30d", "error: A grace period of 30 days is longer than the longest, 7 days. Keep what must "
                               "outlive its query longer in a file sink (--sink parquet)."),
    (":start x r --bogus 1", "error: Unknown option --bogus for :start."),
    (":start bad-name r", "error: 'bad-name' is not a valid query name."),
    (":start undefined_df", "error: No DataFrame named 'undefined_df'. Define it first"),
    (":peek alive many", "error: 'many' is not a number of rows. Give a whole number of rows."),
    (":peek alive --where 'nope > 1'", "error: A column, variable, or function parameter with name `nope` cannot be "
                                       "resolved."),
    (":sql SELEC 1", "error: Syntax error at or near 'SELEC'. Check the SQL or DDL syntax."),
    (":sql SELECT * FROM missing_table", "error: The table or view `missing_table` cannot be found."),
    ("def broken(:", "SyntaxError: "),
    ("undefined_name + 1", "NameError: name 'undefined_name' is not defined"),
    ("1 / 0", "ZeroDivisionError: division by zero"),
    ("spark.range(1).select(F.udf(lambda v: 1 / 0, 'double')('id')).collect()",
     "error: ZeroDivisionError: division by zero"),  # raised on the server, by a UDF: what it raised, one line
    ("r.count()", "error: Queries with streaming sources must be executed with writeStream.start()"),
    ("r.isStreaming()", "hint: isStreaming is a property, not a method: write df.isStreaming without ()"),
    ('spark.read.format("statestore").option("readChangeFeed", true)', "hint: Python writes True"),
    (":await alive --timeout soon", "error: 'soon' is not a number of seconds."),
    (":connect --session-id nope", "error: 'nope' is not a session id. A session id is a UUID, as printed by "
                                   ":session."),
    (":connect http://x:1", "error: 'http://x:1' is not a Spark Connect URL. Use sc://host:port, e.g. "
                            "sc://localhost:15002."),
    (":conf", None),
    (":conf =value", "error: '=value' is not KEY=VALUE. Write :conf KEY=VALUE, e.g. :conf spark.sql.shuffle.partitions=4."),
    (":peek big 5000", "(first 1,000 rows; :peek big 5000 --export FILE.csv writes all 5,000 to a file)"),
    (":tail alive --limit 0", "error: '0' is not a number of rows. Give a whole number of rows, 1 or more."),
    (":await alive --timeout -1", "error: '-1' is not a number of seconds. Give a number of seconds, 0 or more"),
    (":peek alive --export /proc/rows.csv", "error: sparkscope will not write /proc/rows.csv: it is inside a folder "
                                            "of the operating system (/proc). Pick a path in a folder of yours."),
    (":progress alive --export /proc/p.jsonl", "error: sparkscope will not write /proc/p.jsonl: it is inside a "
                                               "folder of the operating system (/proc)."),
    (":peek alive --export /nonexistent-dir/rows.csv", "error: The folder /nonexistent-dir does not exist. Create it "
                                                       "or pick another path."),
    (':produce "bad topic!" x', "error: The topic name 'bad topic!' holds ' !', which Kafka does not allow. Topic "
                                "names use ASCII letters, digits, '.', '_' and '-'."),
    (':produce "" x', "error: The topic name '' is empty."),
    (":produce t1 x --key --bootstrap H:P", "error: --key needs a value before --bootstrap. Usage: :produce TOPIC"),
    ('from pyspark.sql import SparkSession; SparkSession.builder.config("spark.sql.shuffle.partitions", "abc")'
     '.getOrCreate()', "error: The value 'abc' in the config \"spark.sql.shuffle.partitions\" is invalid. It should "
                       "be a/an 'int' value."),
    (":peek alive --order 'value down'", "error: Cannot sort by 'value down'. Name columns, each optionally "
                                         "followed by asc or desc: --order \"value desc, name\"."),
]


def test_bad_inputs_each_give_one_clear_line_and_a_live_prompt(repl):
    repl.run("r = ss.source.rate(2)")
    repl.run("batch = spark.range(3)")
    repl.run("spark.range(5000).createOrReplaceTempView('big')")
    assert "Started alive" in repl.run(":start alive r")
    for line, expected in CASES:
        out = repl.run(line)
        body = out
        if expected is not None:
            assert expected in body, f"{line!r} printed:\n{body}"
        assert "site-packages" not in body, f"{line!r} leaked a library traceback:\n{body}"
        assert "pyspark/" not in body
        if expected and expected.startswith("error: "):
            errors = [ln for ln in body.splitlines() if ln.startswith("error: ")]
            assert len(errors) == 1, f"{line!r} printed {len(errors)} error lines:\n{body}"
    rows = repl.run(":peek big 3 --order 'id desc'")
    assert re.findall(r"^\| (\d+)", rows, re.M) == ["4999", "4998", "4997"], rows
    out = repl.run(":trace")
    assert "Traceback" in out
    out = repl.run(":queries")
    assert re.search(r"\| alive\s+\| [0-9a-f]{8} \| active", out), "a bad input lost the running query"


def test_unreachable_server_on_startup_is_one_line_then_connect_recovers(remote_url):
    from sparkscope.server.ports import free_port

    nowhere = free_port()
    child = spawn("--remote", f"sc://localhost:{nowhere}")
    child.expect(r"error: Cannot reach a Spark Connect server at localhost:\d+\. Check the URL", timeout=30)
    shell = Repl(child)
    shell.prompt()
    assert shell.run("1 + 1").strip() == "2"
    child.send(":queries\r")  # each command's own error line, waited for in turn
    shell.expect(re.escape(f"error: Cannot reach a Spark Connect server at localhost:{nowhere}. "))
    shell.prompt()
    child.send(":connect\r")  # wait for the line itself: a prompt redrawn above it is not the answer
    shell.expect(re.escape(f"error: Cannot reach a Spark Connect server at localhost:{nowhere}. "))
    shell.prompt()

    out = shell.run(f":connect {remote_url}")
    assert re.search(rf"Connected to {remote_url} \(session [0-9a-f]{{8}}, Spark 4\.3\.0\)\.", out)
    assert "Started ticks" in shell.run(":start ticks spark.readStream.format('rate').load()")
    child.send(":connect sc://localhost:1\r")  # output above the prompt may redraw it: wait for the line itself
    shell.expect(re.escape("error: Cannot reach a Spark Connect server at localhost:1. "
                           "Check the URL and that the server is running (sparkscope server status).\r\n"))
    shell.prompt()
    assert re.search(r"\| ticks\s+\| [0-9a-f]{8} \| active", shell.run(":queries")), "a failed :connect lost the query"
    assert shell.run(":connect").strip().startswith(f"Already connected to {remote_url} (session ")

    old_session = re.search(r"session id\s+\|\s+(\S+)", shell.run(":session")).group(1)
    assert shell.run("ticks_df = spark.readStream.format('rate').load()").strip() == ""
    out = shell.run(f":connect {remote_url}")
    assert f"Left ticks running in the previous session; reattach with :connect {remote_url} " \
           f"--session-id {old_session}" in re.sub(r"\s*\n\s*", " ", out)
    assert "(no queries: start one with :start NAME)" in shell.run(":queries")
    assert shell.run(":start again ticks_df").strip() == (
        "error: This DataFrame belongs to a session that was closed. Build it again from the current session "
        "(spark / ss); DataFrames do not move between sessions.")
    out = shell.run(f":connect --session-id {old_session}")  # same server, that session
    assert "Connected to" in out
    assert re.search(r"\| ticks\s+\| [0-9a-f]{8} \| active", shell.run(":queries"))
    assert shell.run(":stop ticks").strip() == "Stopped ticks"
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=15)
    assert "Traceback" not in clean(child.before)


def test_bad_remote_url_exits_with_one_line():
    child = spawn("--remote", "http://example:1/;token=abc")
    child.expect(pexpect.EOF, timeout=20)
    text = clean(child.before).strip()
    assert text == "error: 'http://example:1/;token=***' is not a Spark Connect URL. Use sc://host:port, e.g. sc://localhost:15002."
    child.close()
    assert child.exitstatus == 2


PASTE = "\x1b[200~{}\x1b[201~"  # a terminal's bracketed paste


def test_pasted_escape_sequences_and_huge_lines_never_crash_the_prompt(repl):
    repl.child.send("x = '\x1b[31mred\x1b[0m'\r")  # an escape sequence typed or pasted raw
    text = repl.prompt()
    assert "Unhandled exception" not in text and "Traceback" not in text
    assert repl.run("1 + 1").strip().endswith("2")
    blob = "y" * 10_000
    repl.child.send(PASTE.format(":" + blob) + "\r")
    repl.child.expect("\r\r\n", timeout=60)
    out = repl.prompt()
    errors = [ln for ln in out.splitlines() if ln.startswith("error: ")]
    assert errors == ["error: Unknown command :" + "y" * 59 + "… (10,001 chars). Type :help for the list."]
    assert repl.run("2 + 2").strip().endswith("4")



def test_a_huge_name_or_host_wrong_config_types_and_debug_in_scripts(remote_url, sandbox, tmp_path):
    from tests.helpers import run_sparkscope

    out = run_sparkscope("--remote", remote_url, "-c", "r = ss.source.rate(2)", "-c", f":start {'q' * 10_000} r")
    assert out.returncode == 1
    assert out.stderr.strip() == ("error: A query name of 10,000 characters is too long. Use at most 200 characters "
                                  "(it names the query's table and checkpoint folder).")
    out = run_sparkscope("--remote", f"sc://{'h' * 5000}:15002", "-c", ":queries")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == ("error: The host name in the Spark Connect URL is too long (5,000 characters). A "
                                  "host name has at most 253 characters, 63 between dots: check the URL.")
    config = tmp_path / "sparkscope" / "config.toml"
    config.parent.mkdir()
    config.write_text('[repl]\ncommand_timeout = "soon"\npager = 7\n')
    out = run_sparkscope("--remote", remote_url, "-c", "1 + 1", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert out.returncode == 0 and out.stdout.strip() == "2"
    assert out.stderr.splitlines() == [
        f"notice: [repl] command_timeout = 'soon' in {config} is not valid, so the default applies: write a number "
        "of seconds, e.g. command_timeout = 300 (0: no limit)",
        f"notice: [repl] pager = 7 in {config} is not valid, so the default applies: write a command, e.g. "
        'pager = "less -SRXF", or pager = false for none']
    plain = run_sparkscope("--remote", remote_url, "-c", ":peek nosuch")
    debug = run_sparkscope("--debug", "--remote", remote_url, "-c", ":peek nosuch")
    assert "Traceback" not in plain.stderr and plain.returncode == debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr and "QueryNotFound" in debug.stderr
    assert debug.stderr.rstrip().endswith("error: No query or table named 'nosuch'. List them with :queries, or "
                                          "start one with :start.")


def test_a_value_holding_esc_bel_and_a_tab_prints_as_escapes_in_a_table_that_lines_up(repl):
    """Anyone who can write to a topic or a file a query reads chooses these bytes: they must not reach the
    terminal (ESC ] 0 ; … BEL sets its title, ESC [ 31 m colours it) nor break the table's borders."""
    repl.child.send("v = spark.sql(\"SELECT concat('a', char(27), ']0;pwned', char(7), 'b', char(9), 'c', "
                    "char(27), '[31mred') AS v\")\r")
    repl.prompt()
    repl.child.send("display(v)\r")
    repl.child.expect(r"\(1 row\)", timeout=60)
    raw = repl.child.before
    assert "]0;pwned" in raw and "\x1b]0;pwned" not in raw and "\x07b" not in raw and "\x1b[31mred" not in raw
    table = [line for line in clean(raw).splitlines() if line.startswith(("+", "|"))]
    assert "| a\\x1b]0;pwned\\x07b\\tc\\x1b[31mred |" in table, table
    assert len({len(line) for line in table}) == 1, table
    repl.prompt()


def test_a_runaway_recursion_prints_a_short_traceback_as_python_does(repl):
    out = repl.run("f = lambda n: f(n + 1); f(0)")
    last = out.strip().splitlines()[-2:]
    assert re.fullmatch(r"  \[Previous line repeated \d{3} more times\]", last[0]), out
    assert last[1] == "RecursionError: maximum recursion depth exceeded", out
    assert len(out.strip().splitlines()) < 15, out
    assert repl.run("1 + 1").strip() == "2"


def test_display_of_more_columns_than_the_terminal_holds_shows_one_record_at_a_time(repl):
    """As :sql does (pgcli's auto-expand): 100 columns on 160 would be a 592-character line."""
    out = repl.run("display(spark.range(2).selectExpr(*[f'id + {i} AS c{i}' for i in range(100)]))")
    lines = clean(out).splitlines()
    assert "-[ RECORD 1 ]" in out and "-[ RECORD 2 ]" in out, out
    assert max(len(line) for line in lines) <= 160, max(lines, key=len)
    assert any(re.fullmatch(r"c99\s+\|\s+100", line.strip()) for line in lines), out
