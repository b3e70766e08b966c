"""Reading a query's state: `:state NAME` against the same read typed by hand in plain pyspark.

A stateful query (a count per key over KEYS distinct keys, run once with trigger available-now) leaves its
state in its checkpoint. Each round reads 20 rows of it twice, in alternating order:
- sparkscope: the `:state NAME` command, run by the REPL's executor (the query's operators from
  state-metadata, the state store read, keys and values as columns, 20 rows, the table rendered)
- plain pyspark: spark.read.format("statestore").load(checkpoint).selectExpr("key.*", "value.*",
  "partition_id").limit(20).toPandas(), in a plain Spark Connect session of the same server
The figure is sparkscope's median time as a ratio to plain pyspark's, over RUNS rounds after a warm-up.
Run: make bench  (or .venv/bin/python benchmarks/bench_state.py [KEYS])
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import tempfile
import time

from common import private_server

KEYS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
RUNS = 7


def main() -> None:
    import sparkscope
    from pyspark.sql import SparkSession
    from sparkscope.core.executor import Executor

    with tempfile.TemporaryDirectory() as scratch, private_server() as url:
        ss = sparkscope.connect(url)
        ss.spark.range(KEYS).selectExpr("id AS k").write.parquet(f"{scratch}/keys")
        keys = ss.source.files("parquet", f"{scratch}/keys", schema="k BIGINT")
        query = ss.start(keys.groupBy("k").count(), "keyed", trigger="available-now")
        query.await_termination()
        checkpoint = query.checkpoint
        shell = Executor(out=io.StringIO(), err=io.StringIO())
        shell.set_session(ss)
        plain = SparkSession.builder.remote(f"{url}/;token={os.environ['SPARK_CONNECT_AUTHENTICATE_TOKEN']}") \
            .create()

        def ours() -> None:
            assert shell.run(":state keyed"), shell.err.getvalue()

        def theirs() -> None:
            frame = plain.read.format("statestore").load(checkpoint).selectExpr("key.*", "value.*", "partition_id") \
                .limit(20).toPandas()
            assert len(frame) == 20

        ours(), theirs()
        samples: dict[str, list[float]] = {"ours": [], "theirs": []}
        for round_ in range(RUNS):
            for name, fn in ([("ours", ours), ("theirs", theirs)] if round_ % 2 else
                             [("theirs", theirs), ("ours", ours)]):
                started = time.perf_counter()
                fn()
                samples[name].append(time.perf_counter() - started)
        plain.stop()
        ss.close()
    a, b = statistics.median(samples["ours"]), statistics.median(samples["theirs"])
    print(f":state of a query holding {KEYS:,} keys, 20 rows (median of {RUNS}): sparkscope {a * 1000:.0f} ms, "
          f"plain pyspark {b * 1000:.0f} ms: {a / b:.2f}x")


if __name__ == "__main__":
    main()
