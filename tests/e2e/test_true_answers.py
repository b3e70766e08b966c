"""What the screen shows is true (issue 51), typed as a person types it: a paste on a dumb terminal, a table too
tall for one, and the --format json of a command that fails."""

from __future__ import annotations

import json

import pexpect

from tests.e2e.conftest import spawn
from tests.helpers import run_sparkscope, wait_for


def test_a_dumb_terminal_takes_a_pasted_function_as_typed_and_pages_nothing(remote_url):
    child = spawn("--remote", remote_url, env={"TERM": "dumb", "PAGER": "less"})
    for line in ("def double(x):", "    y = x * 2", "    return y", ""):  # a paste: each line with its indent
        child.send(line + "\r")
    child.send("double(21)\r")
    child.expect(r"\r\n42\r\n", timeout=60)
    # 2,000 columns: taller than the screen, yet no pager (it would read the lines typed next)
    child.send(":schema spark.range(1).selectExpr(*[f'id AS c{i}' for i in range(2000)])\r")
    child.expect(r"\(2000 columns, batch\)", timeout=60)
    child.send("'after' + 'wards'\r")
    child.expect(r"'afterwards'", timeout=30)
    child.send(":quit\r")
    child.expect(pexpect.EOF, timeout=30)


def test_json_output_parses_for_nan_and_display_honours_the_format(remote_url):
    done = run_sparkscope("--remote", remote_url, "--format", "json", "-c",
                          ":sql SELECT CAST('NaN' AS DOUBLE) AS nan, CAST('Infinity' AS DOUBLE) AS inf",
                          "-c", "display(spark.range(2))")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON
    assert lines[0]["rows"] == [{"nan": "NaN", "inf": "Infinity"}]
    assert lines[1]["rows"] == [{"id": 0}, {"id": 1}]


def test_every_view_shows_an_instant_in_the_session_time_zone_as_show_does(remote_url):
    instant = "TIMESTAMP'2024-01-01 00:00:00 UTC' AS t"
    done = run_sparkscope("--remote", remote_url, "-c", ":conf spark.sql.session.timeZone=Asia/Kolkata",
                          "-c", f":sql SELECT {instant}", "-c", f"display(spark.sql(\"SELECT {instant}\"))",
                          "-c", f"spark.sql(\"SELECT {instant}\").show()")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("2024-01-01 05:30:00") == 3, done.stdout  # :sql, display and Spark's own show()
    assert "00:00:00" not in done.stdout, done.stdout


def test_a_web_server_on_the_port_is_named_as_not_spark_connect_and_grpc_says_nothing_of_its_own(server, tmp_path):
    import subprocess
    import sys

    from sparkscope.server.ports import free_port
    from tests.helpers import wait_for

    port = free_port()
    web = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from sparkscope.client.connection.probe import port_open

        wait_for(lambda: port_open("127.0.0.1", port, timeout=0.5), timeout=30, what="the web server")
        done = run_sparkscope("server", "check", "--remote", f"sc://localhost:{port}")
        assert done.returncode != 0
        assert done.stderr == (f"error: localhost:{port} answered, but not as a Spark Connect (gRPC) server. Check "
                               "the port: a web server or another service listens there.\n"), done.stderr
    finally:
        web.terminate()
        web.wait(timeout=30)
    # TLS asked of a plaintext server: sparkscope's one line, and none of gRPC's own (its source locations)
    tls = run_sparkscope("-c", "1", "--remote", f"sc://localhost:{server.port}/;use_ssl=true")
    assert tls.returncode != 0
    assert len(tls.stderr.strip().splitlines()) == 1 and "Source Location" not in tls.stderr, tls.stderr


def test_names_alike_but_for_case_names_no_table_has_and_an_unknown_order_each_get_one_line(repl):
    """Issue 55 rows 12, 24, 31, 32: Spark's view names ignore case, so a second query named alike would read the
    first's rows; a name with a space or a dash names no query; an order by a column that is not there; and a peek
    of a time-kept query whose rows all aged out says why it shows none."""
    assert "Started Up" in repl.run(":start Up ss.source.rate(5)")
    assert repl.run(":start up ss.source.rate(5)") == (
        "error: A query named 'Up' is running, and 'up' differs from it only in case: SQL and spark.table() would "
        "name both alike. Pick a name that differs in more than case.\n")
    for name in ("'my query'", "a-b"):
        assert repl.run(f":peek {name}") == (f"error: No query or table named '{name.strip(chr(39))}'. List them with "
                                             ":queries, or start one with :start.\n")
    assert repl.run(":peek Up --order nosuch") == ("error: No column nosuch to order by; the columns: timestamp, "
                                                   "value. Order by one of them.\n")
    assert "Started brief" in repl.run(":start brief ss.source.rate(5) --keep 1s")
    repl.run(":await brief --timeout 2")
    repl.run(":stop brief")
    def aged_out() -> str | None:
        shown = repl.run(":peek brief")
        return shown if "no rows" in shown else None

    aged = wait_for(aged_out, timeout=30, what="the rows kept to pass their second")
    assert aged.strip().splitlines()[-1] == ("(no rows: brief keeps the rows of the last 1 s, at most 100,000 rows, "
                                             "and the rows it kept are older)")
    repl.run(":stop --all")
