"""sparkscope.connect() is a library call: it leaves the process's logging and warnings alone,
prints nothing, and its errors speak Python, not REPL commands."""

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
        return {"loggers": loggers, "propagate": propagate, "filters": [str(f) for f in warnings.filters]}

    # pyspark configures some loggers and warning filters itself when imported: compare after that
    import pyspark.sql.connect.session, pyspark.sql.connect.client.retries, pyspark.sql.functions  # noqa
    before = state()
    with sparkscope.connect(sys.argv[1]) as ss:
        ss.start(ss.source.rate(5), "lib_ticks").stop()
        ss.monitor  # noqa: B018 - the listener thread too
        print(json.dumps({"before": before, "after": state()}))
""")


def test_connect_leaves_logging_and_warnings_as_they_were(remote_url):
    out = subprocess.run([sys.executable, "-c", SCRIPT, remote_url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["after"] == seen["before"]
    assert "notice:" not in out.stderr and "Traceback" not in out.stderr
