"""sparkscope.connect() is a library call: it leaves the process's logging, warnings, environment, tabulate and
pyspark's switches as they were once it is closed, prints nothing, and its errors speak Python, not REPL commands."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, logging, sys, warnings
    import sparkscope

    def state():
        names = ["", "pyspark", "py4j", "grpc", "sparkscope", "SQLQueryContextLogger"]
        loggers = {n: [type(h).__name__ for h in logging.getLogger(n).handlers] for n in names}
        propagate = {n: logging.getLogger(n).propagate for n in names}
        import os, tabulate, pyspark.sql.connect.client.core as core
        return {"loggers": loggers, "propagate": propagate, "filters": [str(f) for f in warnings.filters],
                "env": dict(os.environ), "tabulate padding": tabulate.MIN_PADDING,
                "pyspark's gc switch": repr(getattr(core, "disable_gc", None))}

    # pyspark configures some loggers and warning filters itself when imported: compare after that
    import pyspark.sql.connect.session, pyspark.sql.connect.client.retries, pyspark.sql.functions  # noqa
    before = state()
    with sparkscope.connect(sys.argv[1]) as ss:
        ss.start(ss.source.rate(5), "lib_ticks").stop()
        ss.streams.monitor.tracks()  # its first use starts the listener thread too
        during = state()
    print(json.dumps({"before": before, "during": during, "after": state()}))
""")


def test_connect_leaves_logging_warnings_the_environment_and_pyspark_as_they_were(remote_url):
    out = subprocess.run([sys.executable, "-c", SCRIPT, remote_url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["during"]["env"].get("SPARK_CONNECT_MODE_ENABLED") == "1"  # what an open session needs of it
    assert seen["after"] == seen["before"]
    assert "notice:" not in out.stderr and "Traceback" not in out.stderr


def test_closing_a_second_session_leaves_the_first_one_parsing_ddl_strings(remote_url):
    """pyspark parses a DDL string (a UDF's return type, transformWithState's schema) with its default session;
    its stop() leaves none. Closing one sparkscope session must not break another that is still open."""
    import pyspark.sql.functions as F

    import sparkscope

    with sparkscope.connect(remote_url) as first:
        with sparkscope.connect(remote_url) as second:
            assert second.spark.range(1).count() == 1
        assert str(F.udf(lambda x: x, "struct<k: string, n: int>").returnType) == (
            "StructType([StructField('k', StringType(), True), StructField('n', IntegerType(), True)])")
        assert first.spark.range(2).count() == 2
