"""What knowing the server costs: the first `ss.start(…, foreach_batch=…)` of a session asks the server what it can
run (one Python UDF, one analysed Kafka read, two configuration reads), since foreachBatch runs Python there; later
starts, and later sessions of the same server run, ask nothing but the server's application id. (The default sink
asks nothing: it runs in the server's JVM.) Each start is compared with plain pyspark starting the same query into
the same sink (`writeStream.foreachBatch(...).start()`) in the same run.

    .venv/bin/python benchmarks/bench_probe.py

Every round uses a fresh state dir, so its first session knows nothing of the server; the server is one embedded
server, started once (its first Python worker is started before the rounds, by a warm-up query of each kind).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from common import private_server

ROUNDS = 5


def plain_start(url: str, name: str) -> float:
    from pyspark.sql.connect.session import SparkSession

    spark = SparkSession.builder.remote(url).create()
    try:
        df = spark.readStream.format("rate").option("rowsPerSecond", 5).load()
        started = time.perf_counter()
        query = df.writeStream.queryName(name).foreachBatch(lambda batch, batch_id: None).start()
        seconds = time.perf_counter() - started
        query.stop()
        return seconds
    finally:
        spark.stop()


def sparkscope_start(url: str, name: str) -> tuple[float, float]:
    """(the start's seconds, of which the probe's) in a new session."""
    import sparkscope

    with sparkscope.connect(url) as ss:
        df = ss.spark.readStream.format("rate").option("rowsPerSecond", 5).load()
        known_before = ss.server.facts.known() is not None
        started = time.perf_counter()
        query = ss.start(df, name, foreach_batch=lambda batch, batch_id: None)
        seconds = time.perf_counter() - started
        assert query.sink == "foreach_batch", query.sink
        assert not known_before
        probe = ss.server.facts.get().probe_seconds
        query.stop()
        return seconds, probe


def main() -> None:
    with private_server() as url:
        token = os.environ.get("SPARK_CONNECT_AUTHENTICATE_TOKEN")
        url_with_token = f"{url}/;token={token}" if token else url
        plain_start(url_with_token, "warm_plain")  # the server's first Python workers, outside the figures
        first, probes, later, plain = [], [], [], []
        for index in range(ROUNDS):
            with tempfile.TemporaryDirectory() as home:
                os.environ["XDG_STATE_HOME"] = home
                seconds, probe = sparkscope_start(url, f"first_{index}")
                first.append(seconds)
                probes.append(probe)
                later.append(sparkscope_start(url, f"later_{index}")[0])  # same state dir: the server is known
                assert Path(home, "sparkscope", "servers.json").exists()
            plain.append(plain_start(url_with_token, f"plain_{index}"))
        base = statistics.median(plain)
        print(f"plain pyspark foreachBatch start:   {base:.3f} s (median of {ROUNDS})")
        print(f"sparkscope first start (probe):     {statistics.median(first):.3f} s = "
              f"{statistics.median(first) / base:.2f}x; the probe itself {statistics.median(probes):.3f} s")
        print(f"sparkscope later start, new session: {statistics.median(later):.3f} s = "
              f"{statistics.median(later) / base:.2f}x")


if __name__ == "__main__":
    main()
