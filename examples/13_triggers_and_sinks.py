"""Seed 001: the triggers (processing time, once, available-now, continuous) and the sinks
(memory, console, table, parquet/json/csv/orc) on a rate source and a file source.

    .venv/bin/python examples/13_triggers_and_sinks.py
"""

from __future__ import annotations

from _common import example, show, wait_until, write_json

with example(__doc__) as (ss, scratch, _):
    rate = ss.source.rate(20)
    ticks = ss.start(rate, "ticks", trigger="500 milliseconds")
    wait_until(lambda: len(ticks.history) >= 3, "three micro-batches")
    print(f"processing time: {ticks.name} ran {len(ticks.history)} micro-batches, "
          f"last at {ticks.progress.input_rows_per_second:.1f} rows/s in")
    ticks.stop()

    live = ss.start(rate.selectExpr("value", "value % 2 = 0 AS even"), "live", trigger="continuous:1 second")
    wait_until(lambda: len(ss.peek("live", 20)) >= 20, "twenty rows from the continuous query")
    print(f"continuous: {live.name} wrote {len(ss.peek('live', 1000))} rows without micro-batches "
          f"(history {len(live.history)})")
    live.stop()

    for i in range(3):
        write_json(scratch / "orders", f"{i}.json", [{"id": i * 10 + j, "amount": j * 2.5} for j in range(10)])
    orders = ss.source.files("json", str(scratch / "orders"), schema="id INT, amount DOUBLE",
                             max_files_per_trigger=1)
    once = ss.start(orders, "orders_once", trigger="once")  # one batch over everything there is
    now = ss.start(orders, "orders_now", trigger="available-now")  # everything, still one file per batch
    once.await_termination(120)
    now.await_termination(120)
    print(f"once: {len(once.history)} batch, {len(ss.peek('orders_once', 1000))} rows; "
          f"available-now: {len(now.history)} batches, {len(ss.peek('orders_now', 1000))} rows")

    ss.start(orders, "orders_table", sink="table", table="orders_copy", trigger="available-now") \
        .await_termination(120)
    show("table sink: spark.table('orders_copy')", ss.sql("SELECT count(*) AS rows, sum(amount) AS amount "
                                                          "FROM orders_copy"))
    for fmt in ("parquet", "json", "csv", "orc"):
        query = ss.start(orders, f"orders_{fmt}", sink=fmt, path=str(scratch / fmt), trigger="available-now")
        query.await_termination(120)
        print(f"{fmt} sink: {len(ss.peek(query, 1000))} rows under {scratch / fmt}")
    ss.sql("DROP TABLE orders_copy")

    console = ss.start(orders.where("id < 3"), "to_console", sink="console", trigger="available-now")
    console.await_termination(120)
    print("console sink: the rows went to the server's stdout (its log), as Spark's console sink does")
