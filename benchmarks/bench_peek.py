"""ss.peek(20 rows) of a 1,000,000-row memory table vs plain pyspark reading the same table.

Baselines, same run and same session: spark.sql("select * from t").toPandas() (what a naive peek
does) and spark.sql("select * from t limit 20").toPandas(). Median of RUNS runs each.
Run: make bench  (or .venv/bin/python benchmarks/bench_peek.py)
"""

from __future__ import annotations

from common import median_time, private_server

RUNS = 5


def main() -> None:
    import sparkscope

    with private_server() as url, sparkscope.connect(url) as ss:
        import tempfile

        data = tempfile.mkdtemp(prefix="sparkscope-bench-peek-")
        ss.spark.range(1_000_000).selectExpr("id", "id * 2 as value", "uuid() as tag") \
            .write.mode("overwrite").parquet(data)
        rows = ss.source.files("parquet", data, schema="id BIGINT, value BIGINT, tag STRING")
        query = ss.start(rows, "bench_peek", trigger="available-now")
        query.await_termination(300)
        total = ss.sql("select count(*) from bench_peek").rows[0][0]
        peek = median_time(lambda: ss.peek("bench_peek", 20), RUNS)
        full = median_time(lambda: ss.spark.sql("select * from bench_peek").toPandas(), RUNS)
        limited = median_time(lambda: ss.spark.sql("select * from bench_peek limit 20").toPandas(), RUNS)
        print(f"memory table rows          : {total:,}")
        print(f"ss.peek(20)                : {peek * 1000:7.1f} ms")
        print(f"select * .toPandas()       : {full * 1000:7.1f} ms  (peek = {peek / full:.3f}x)")
        print(f"select * limit 20 .toPandas: {limited * 1000:7.1f} ms  (peek = {peek / limited:.2f}x)")


if __name__ == "__main__":
    main()
