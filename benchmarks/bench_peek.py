"""ss.peek(20 rows) of a 1,000,000-row memory table vs plain pyspark reading the same table; and ss.peek of a stream
of STREAM_RATE rows/s into the default sink vs the cheapest round trip of all, spark.sql("select 1").collect().

Baselines, same run and same session: spark.sql("select * from t").toPandas() (what a naive peek
does), spark.sql("select * from t limit 20").toPandas() and spark.table(t).limit(20).toArrow() (what
peek sends). After one warm-up call of each they run in rounds, each round starting with another
call (JVM warm-up, GC and drift hit them alike); medians of RUNS rounds (STREAM_RUNS for the stream).
Run: make bench  (or .venv/bin/python benchmarks/bench_peek.py)
"""

from __future__ import annotations

import statistics
import tempfile
import time

from common import private_server

RUNS = 15
STREAM_RATE = 60_000
STREAM_RUNS = 5


def interleaved_medians(calls: dict, runs: int) -> dict:
    """Median seconds per call; every round runs each call once, starting with a different one."""
    names = list(calls)
    samples: dict = {name: [] for name in names}
    for fn in calls.values():
        fn()
    for round_ in range(runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            calls[name]()
            samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    import sparkscope

    with private_server() as url, sparkscope.connect(url) as ss, \
            tempfile.TemporaryDirectory(prefix="sparkscope-bench-peek-") as data:
        ss.spark.range(1_000_000).selectExpr("id", "id * 2 as value", "uuid() as tag") \
            .write.mode("overwrite").parquet(data)
        rows = ss.source.files("parquet", data, schema="id BIGINT, value BIGINT, tag STRING")
        query = ss.start(rows, "bench_peek", sink="memory", trigger="available-now")
        query.await_termination(300)
        total = ss.sql("select count(*) from bench_peek").rows[0][0]
        times = interleaved_medians({
            "peek": lambda: ss.peek("bench_peek", 20),
            "full": lambda: ss.spark.sql("select * from bench_peek").toPandas(),
            "limited": lambda: ss.spark.sql("select * from bench_peek limit 20").toPandas(),
            "same_plan": lambda: ss.spark.table("bench_peek").limit(20).toArrow(),
        }, RUNS)
        peek, full, limited, same = times["peek"], times["full"], times["limited"], times["same_plan"]
        print(f"memory table rows          : {total:,}")
        print(f"ss.peek(20)                : {peek * 1000:7.1f} ms")
        print(f"select * .toPandas()       : {full * 1000:7.1f} ms  (peek = {peek / full:.3f}x)")
        print(f"select * limit 20 .toPandas: {limited * 1000:7.1f} ms  (peek = {peek / limited:.2f}x)")
        print(f"table().limit(20).toArrow  : {same * 1000:7.1f} ms  (peek = {peek / same:.2f}x)")
        query.stop()
        stream = ss.start(ss.source.rate(STREAM_RATE), "bench_peek_stream")
        while not ss.peek("bench_peek_stream", 1).rows:
            stream.await_termination(timeout=0.2)
        times = interleaved_medians({
            "peek": lambda: ss.peek("bench_peek_stream", 20),
            "select_1": lambda: ss.spark.sql("select 1").collect(),
        }, STREAM_RUNS)
        rate = stream.progress.input_rows_per_second if stream.progress else 0
        print(f"a stream of {STREAM_RATE:,} rows/s ({rate:,.0f} measured), default sink (last 10,000 rows):")
        print(f"ss.peek(20)                : {times['peek'] * 1000:7.1f} ms  "
              f"({times['peek'] / times['select_1']:.2f}x select 1)")
        print(f"select 1 .collect()        : {times['select_1'] * 1000:7.1f} ms")
        stream.stop()


if __name__ == "__main__":
    main()
