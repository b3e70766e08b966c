"""sparkscope in a Jupyter kernel, run headless by nbclient: `%load_ext sparkscope`, a stream's display() updating in
its cell until the kernel is interrupted (the query runs on), %watch and %tail in their cells, the magics on a
windowed count fed with %feed, and each failure in one line."""

from __future__ import annotations

import re

from tests.notebooks import cell, html_of, run, text_of


def test_a_notebook_loads_sparkscope_displays_a_live_stream_and_runs_the_magics(remote_url):
    steps = {
        "load": cell("%load_ext sparkscope"),
        "connect": cell(f"%sparkscope --remote {remote_url}"),
        "define": cell("spark.conf.set('spark.sql.shuffle.partitions', '2')\n"
                       "ticks = spark.readStream.format('rate').option('rowsPerSecond', 20).load()"),
        "start": cell("%start ticks --trigger 500ms"),
        "display": cell("display(ticks.selectExpr('value', 'value % 3 AS bucket'), streamName='shown')",
                        interrupt_after=2),
        "queries": cell("%queries"),
        "complete": cell("from IPython.core.completer import provisionalcompleter\n"
                         "with provisionalcompleter():\n"
                         "    print([c.text for c in get_ipython().Completer.completions('%peek ti', 8)])"),
        "peek": cell("%peek ticks 3 --order value"),
        "watch": cell("%watch", interrupt_after=2),
        "tail": cell("%tail ticks --limit 2", interrupt_on=(r"Batch: \d+ \(ticks\)", 2)),
        "memory": cell('mobile = ss.source.memory("id STRING, action STRING, ts TIMESTAMP")\n'
                       'mobile_counts = mobile.df.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes"), '
                       '"action").count()'),
        "start counts": cell("%start mobile_counts --mode update"),
        "feed": cell('%feed mobile ("p1", "open", "2018-03-02 10:15:20"), ("p2", "open", "2018-03-02 10:22:40"), '
                     '("p3", "open", "2018-03-02 10:33:50")'),
        "feed late": cell('%feed mobile ("p5", "open", "2018-03-02 10:11:35")'),
        "peek counts": cell("%peek mobile_counts --order window"),
        "sql": cell("%%sql\nSELECT action, sum(count) AS total\nFROM mobile_counts\nGROUP BY action"),
        "state": cell("%state mobile_counts"),
        "late": cell("%late mobile_counts"),
        "stop": cell("%stop --all"),
        "bad magic": cell("%peek nosuch"),
        "bad code": cell("spark.table('nosuch_table').count()"),
    }
    nb, updates = run(list(steps.values()))
    index = {name: position for position, name in enumerate(steps)}
    out = {name: text_of(nb.cells[position]) for name, position in index.items()}
    assert "sparkscope is loaded" in out["load"], out["load"]
    assert re.search(rf"Connected to {re.escape(remote_url)} \(session [0-9a-f]{{8}}, Spark 4\.", out["connect"])
    assert "Started ticks" in out["start"], out["start"]

    # the stream's display: one output, updated in place at each batch, then the interrupt said; the query runs on
    shown = updates.get(index["display"], [])
    numbers = [int(found.group(1)) for found in (re.search(r"Batch: (\d+) \(shown", u.get("text/plain", ""))
                                                 for u in shown) if found]
    assert len(set(numbers)) >= 2 and numbers == sorted(numbers), shown  # each update a newer batch, the last again
    assert "Stopped updating: the kernel was interrupted. shown keeps running (%stop shown ends it)." in \
        shown[-1].get("text/plain", ""), shown[-1]
    assert "Traceback" not in out["display"], out["display"]
    assert "<th>value</th><th>bucket</th>" in html_of(nb.cells[index["display"]])
    assert re.search(r"\| shown +\| [0-9a-f]{8} +\| active", out["queries"]), out["queries"]
    assert re.search(r"\| ticks +\| [0-9a-f]{8} +\| active", out["queries"]), out["queries"]
    assert "'ticks'" in out["complete"], out["complete"]  # Tab after %peek completes the query's name
    assert re.search(r"\(3 rows\)", out["peek"]) and "<table" in html_of(nb.cells[index["peek"]]), out["peek"]
    peeked = [o["data"]["application/vnd.sparkscope.result+json"] for o in nb.cells[index["peek"]]["outputs"]
              if "application/vnd.sparkscope.result+json" in o.get("data", {})]
    assert [peeked[0]["command"], len(peeked[0]["rows"])] == ["peek", 3] and "value" in peeked[0]["rows"][0], peeked

    # %watch: the queries' rows, updated, until the interrupt; %tail: batches printed in its cell
    watched = updates.get(index["watch"], [])
    assert len(watched) >= 2, watched
    assert re.search(r"\| ticks +\| active +\| +\d+ ", out["watch"]) and re.search(r"\| shown +\| active", out["watch"])
    assert "Stopped watching: the kernel was interrupted. The queries keep running." in out["watch"], out["watch"]
    assert len(re.findall(r"Batch: \d+ \(ticks\)", out["tail"])) >= 2, out["tail"]
    assert "Stopped tailing ticks" in out["tail"] and "Traceback" not in out["tail"], out["tail"]

    assert "Started mobile_counts" in out["start counts"], out["start counts"]
    assert "Added batch 0 of mobile (3 rows)" in out["feed"], out["feed"]
    assert "mobile_counts: watermark 2018-03-02 10:23:50" in out["feed"], out["feed"]
    assert re.search(r"mobile_counts, batch \d+: 1 late row dropped", out["feed late"]), out["feed late"]
    assert len(re.findall(r"\| open +\| 1 +\|", out["peek counts"])) == 3, out["peek counts"]
    assert re.search(r"\| open +\| 3 +\|", out["sql"]), out["sql"]
    # the state after the watermark (10:23:50) evicted the window that ended at 10:20
    windows = re.findall(r"\{2018-03-02 (\d\d:\d\d):00, 2018-03-02 \d\d:\d\d:00\} \| open +\| 1 ", out["state"])
    assert sorted(windows) == ["10:20", "10:30"] and "(2 rows of mobile_counts's state)" in out["state"], out["state"]
    assert "mobile_counts: event time ts (delay 10 minutes)." in out["late"], out["late"]
    assert re.search(r"Late rows dropped: 1 in batch \d+\.", out["late"]), out["late"]
    stopped = re.search(r"Stopped 3 queries: (.*)", out["stop"])
    assert stopped and sorted(stopped.group(1).split(", ")) == ["mobile_counts", "shown", "ticks"], out["stop"]

    assert out["bad magic"].strip() == ("error: No query or table named 'nosuch'. List them with %queries, or start "
                                        "one with %start."), out["bad magic"]
    assert out["bad code"].strip().startswith("error: The table or view `nosuch_table` cannot be found"), out["bad code"]
    assert "Check the name with %sql SHOW TABLES" in out["bad code"] and "Traceback" not in out["bad code"]


def test_a_notebook_s_sql_reaches_spark_as_written_and_the_extension_behaves_as_ipython_s_own(remote_url):
    """Issue 63, rows 1 to 7, in a real kernel: %%sql's comments and literals, a failing stream's display(), a cell
    that only binds T, and an unload and a second load."""
    steps = {
        "load": cell("%load_ext sparkscope"),
        "bind": cell("T = 3\nF = 1\nprint('spark' in globals(), T + F)"),
        "connect": cell(f"%sparkscope --remote {remote_url}"),
        "literal": cell("%%sql\nselect 'a  b' as s, length('a  b') as n"),
        "comment": cell("%%sql\n-- a comment\nselect 1 as one"),
        "line": cell("%sql select 'c   d' as t"),
        "failing": cell("bad = spark.readStream.format('rate').load().selectExpr('raise_error(\"boom\")')\n"
                        "display(bad, streamName='failing_display')"),
        "unload": cell("%unload_ext sparkscope"),
        "gone": cell("print([name for name in ('spark', 'ss', 'dbutils', 'F') if name in globals()])"),
        "reload": cell("%load_ext sparkscope"),
        "again": cell(f"%sparkscope --remote {remote_url}"),
        "sql": cell("%sql select 3 as three"),
        "stop": cell("%stop --all"),
    }
    nb, _ = run(list(steps.values()))
    out = {name: text_of(nb.cells[position]) for position, name in enumerate(steps)}
    assert out["bind"].strip() == "False 4", out["bind"]  # T = 3 opened no session, and T is the user's
    assert re.search(r"\| a  b +\| 4 +\|", out["literal"]), out["literal"]
    assert re.search(r"\| 1 +\|", out["comment"]) and "error" not in out["comment"], out["comment"]
    assert re.search(r"\| c   d +\|", out["line"]), out["line"]
    assert "failing_display ended (failed): this output no longer updates. error: " in out["failing"], out["failing"]
    assert "boom" in out["failing"] and "Traceback" not in out["failing"], out["failing"]
    assert out["gone"].strip() == "[]", out["gone"]
    assert "error" not in out["again"] and re.search(r"\| 3 +\|", out["sql"]), out["sql"]
    errors = [name for position, name in enumerate(steps)
              if any(o["output_type"] == "error" for o in nb.cells[position].get("outputs", []))]
    assert errors == [], errors


def test_ipython_in_a_terminal_loads_sparkscope_and_ctrl_c_ends_a_wait_never_the_stream(remote_url, tmp_path):
    import os

    import pexpect

    from tests.helpers import wait_for

    env = {**os.environ, "TERM": "dumb", "COLUMNS": "160", "LINES": "40"}
    child = pexpect.spawn(os.path.join(os.path.dirname(os.sys.executable), "ipython"),
                          ["--simple-prompt", "--no-banner", "--colors=NoColor", "--no-confirm-exit"],
                          env=env, encoding="utf-8", timeout=120, dimensions=(40, 160))
    prompt = r"In \[\d+\]: "

    def run(line: str) -> str:
        child.sendline(line)
        child.expect(prompt)
        return child.before

    try:
        child.expect(prompt)
        assert "sparkscope is loaded" in run("%load_ext sparkscope")
        assert f"Connected to {remote_url}" in run(f"%sparkscope --remote {remote_url}")
        run("beats = spark.readStream.format('rate').option('rowsPerSecond', 10).load()")
        assert "Started beats" in run("%start beats --trigger 500ms")
        wait_for(lambda: "(3 rows)" in run("%peek beats 3"), timeout=60, what="beats's first rows")
        log = tmp_path / "sparkscope.log"  # the wait says in a debug record that it has begun
        run(f"import logging; logging.getLogger('sparkscope').addHandler(logging.FileHandler({str(log)!r})); "
            "logging.getLogger('sparkscope').setLevel(logging.DEBUG)")
        child.sendline("spark.streams.awaitAnyTermination()")
        wait_for(lambda: log.exists() and "waiting for any query beside its server calls" in log.read_text(),
                 timeout=60, what="the wait to begin")
        child.sendintr()
        child.expect(prompt)
        said = child.before
        assert "Stopped waiting; the queries keep running (%stop NAME ends one)." in said, said
        assert "Traceback" not in said, said
        assert re.search(r"\| beats +\| [0-9a-f]{8} +\| active", run("%queries"))
        assert "Stopped beats" in run("%stop beats")
    finally:
        child.sendline("exit")
        child.expect(pexpect.EOF, timeout=60)
