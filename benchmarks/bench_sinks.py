"""The sinks a raw stream can go to, over a long run: the server's heap, the cost per batch, and :peek.

A rate stream of RATE rows/s runs into each candidate until it has written TARGET rows:
- bounded: sparkscope's default sink (a ring of the newest 10,000 rows in the server's JVM, read through a
  temporary view; client/queries/bounded_sink.py, sparkscope/jars/src/sparkscope/sink/KeepNewest.java)
- memory: Spark's memory sink (sink="memory"; what plain pyspark's writeStream.format("memory") does)
- parquet: a parquet file sink in a temporary folder, read back as ss.peek reads any file sink

Figures, all from the same run and the same server:
- ss.peek(20 rows) after 10 s and after TARGET rows, as a ratio to a trivial round trip
  (spark.sql("select 1").collect()), the two called in alternating rounds; medians of RUNS rounds
- the median time a batch spends in the sink (durationMs.addBatch), as a ratio to the memory sink's
- the server's used heap after a full GC (jcmd), as growth over the heap before the stream started
- the resident size of the server's Python worker for the query, if it has one
Run: make bench  (or .venv/bin/python benchmarks/bench_sinks.py [TARGET_ROWS])
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time

from common import children, heap_used_mb, private_server_info, rss_mb

RATE = 200_000
TARGET = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
RUNS = 7
CANDIDATES = ("bounded", "parquet", "memory")  # the memory sink last: it may take the server down


def peek_ratio(ss, name: str) -> tuple[float, float]:
    """(peek seconds, peek ÷ trivial round trip): medians of RUNS alternating rounds, after a warm-up."""
    def trivial() -> None:
        ss.spark.sql("select 1").collect()

    def peek() -> None:
        ss.peek(name, 20)

    peeks, trivials = [], []
    trivial(), peek()
    for round_ in range(RUNS):
        for fn, samples in ([(peek, peeks), (trivial, trivials)] if round_ % 2 else
                            [(trivial, trivials), (peek, peeks)]):
            started = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - started)
    return statistics.median(peeks), statistics.median(peeks) / statistics.median(trivials)


def run(ss, info, candidate: str, folder: str) -> dict:
    heap_before = heap_used_mb(info.pid)
    workers_before = set(children(info.pid))
    written, add_batch, lock = [0], [], threading.Lock()
    source = ss.spark.readStream.format("rate").option("rowsPerSecond", RATE).option("numPartitions", 2).load()
    name = f"bench_{candidate}"
    kwargs = {"memory": {"sink": "memory"}, "parquet": {"sink": "parquet", "path": f"{folder}/{name}"}}
    query = ss.start(source, name, **kwargs.get(candidate, {}))

    def on_event(event) -> None:
        if event.kind == "progress" and event.query_id == query.id and event.progress is not None:
            with lock:
                written[0] += event.progress.input_rows
                if event.progress.input_rows:
                    add_batch.append(event.progress.durations_ms.get("addBatch", 0))

    unsubscribe = ss.streams.monitor.subscribe(on_event)
    started = time.monotonic()
    while time.monotonic() - started < 10:  # the figure is "after 10 seconds"
        time.sleep(0.2)
    early = peek_ratio(ss, name)
    while written[0] < TARGET:
        if query.state != "active":
            raise RuntimeError(f"{name} ended: {query.exception}")
        time.sleep(0.5)
    print(f"  {candidate}: {written[0]:,} rows after {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    with lock:
        batch_ms = statistics.median(add_batch) if add_batch else 0.0
    try:
        late = peek_ratio(ss, name)
    except Exception as exc:  # Spark's memory sink can take the server down here: that is the figure
        return {"rows": written[0], "early": early, "late": None, "failed": str(exc), "batch_ms": batch_ms,
                "heap_growth": None, "worker_rss": 0.0}
    rows_then = written[0]
    workers = [pid for pid in children(info.pid) if pid not in workers_before]
    worker_rss = sum(rss_mb(pid) for pid in workers)
    heap_after = heap_used_mb(info.pid)
    unsubscribe()
    query.stop()
    ss.spark.sql(f"DROP VIEW IF EXISTS {name}")  # the memory sink's rows go with its view
    return {"rows": rows_then, "seconds": time.monotonic() - started, "early": early, "late": late,
            "batch_ms": batch_ms, "batches": len(add_batch), "heap_growth": heap_after - heap_before,
            "worker_rss": worker_rss}


def main() -> None:
    import sparkscope

    results = {}
    with private_server_info() as info, tempfile.TemporaryDirectory(prefix="sparkscope-bench-sinks-") as folder, \
            sparkscope.connect(f"sc://localhost:{info.port}") as ss:
        for candidate in CANDIDATES:
            results[candidate] = run(ss, info, candidate, folder)
            print(f"  {candidate}: done", file=sys.stderr, flush=True)
    memory_batch = results["memory"]["batch_ms"] if "memory" in results else 1.0
    print(f"rate stream of {RATE:,} rows/s into each sink until {TARGET:,} rows; peek ratios are to a trivial "
          f"round trip, medians of {RUNS}")
    print(f"{'sink':8} {'rows':>10} {'peek@10s':>16} {'peek@end':>16} {'addBatch':>18} {'heap growth':>12} "
          f"{'py worker':>10}")
    for candidate, r in results.items():
        batch = (f"{r['batch_ms']:6.0f} ms {r['batch_ms'] / memory_batch:5.2f}x mem" if "memory" in results
                 else f"{r['batch_ms']:6.0f} ms    n/a   ")
        if r["late"] is None:
            print(f"{candidate:8} {r['rows']:>10,} {r['early'][0] * 1000:7.1f} ms {r['early'][1]:5.2f}x "
                  f"{'server died':>16} {batch}   peeking at {r['rows']:,} rows: {r['failed'][:60]}")
            continue
        print(f"{candidate:8} {r['rows']:>10,} {r['early'][0] * 1000:7.1f} ms {r['early'][1]:5.2f}x "
              f"{r['late'][0] * 1000:7.1f} ms {r['late'][1]:5.2f}x {batch} "
              f"{r['heap_growth']:9.0f} MB {r['worker_rss']:7.0f} MB")

if __name__ == "__main__":
    main()
