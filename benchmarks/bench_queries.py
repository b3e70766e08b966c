"""Cost of one `ss.streams.queries()` (name, id, state, last batch, rates) for 1, 10 and 20 active queries,
next to the plain pyspark loop over spark.streams.active reading lastProgress and status.
Median of RUNS runs each, same session. Run: make bench  (or .venv/bin/python benchmarks/bench_queries.py)
"""

from __future__ import annotations

import time

from common import median_time, private_server

RUNS = 7


def main() -> None:
    import sparkscope

    with private_server() as url, sparkscope.connect(url) as ss:
        spark = ss.spark

        def plain() -> list:
            return [(q.name, q.id, q.isActive, q.lastProgress, q.status) for q in spark.streams.active]

        started = []
        for count in (1, 10, 20):
            while len(started) < count:
                started.append(ss.start(ss.source.rate(1), f"q{len(started)}", trigger="5 seconds"))
            while any(q.progress is None for q in started):
                time.sleep(0.5)
            ss.streams.monitor.close()
            ours = median_time(ss.streams.queries, RUNS)
            ss.streams.monitor  # noqa: B018 - starts listening again
            time.sleep(6)  # one progress event per query reaches the monitor
            live = median_time(ss.streams.queries, RUNS)
            base = median_time(plain, RUNS)
            print(f"{count:2d} queries: ss.streams.queries() {ours * 1000:7.1f} ms ({ours / base:.2f}x)   with the monitor "
                  f"listening {live * 1000:7.1f} ms ({live / base:.2f}x)   plain pyspark loop {base * 1000:7.1f} ms")
        ss.streams.stop_all()


if __name__ == "__main__":
    main()
