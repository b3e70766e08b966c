"""What a query costs a shared server: sparkscope's default `ss.start` next to plain pyspark's
`writeStream.format("memory")…start()`, QUERIES append streams of RATE rows/s each, on a fresh embedded server per
side (the same JVM and settings), sampled SAMPLE_AT seconds after the first start:

- server memory: the proportional set size (PSS, /proc/PID/smaps_rollup) of every process of the server (its JVM,
  its log writer, its Python workers: found by the state dir in their environment), and per query: the growth over
  the idle server, divided by QUERIES
- server CPU: the cores the server's processes used over the last CPU_WINDOW seconds before the sample
- batch time: the median triggerExecution of every batch of every query in that window
- starts: QUERIES started one after another, and (on a fresh server of their own) QUERIES started at once from
  threads, each the wall time until every start returned
- reading 20 rows of one query, median of READS

Each figure is given as the ratio of sparkscope to pyspark. `--minutes N` runs the long variant instead: both sides
for N minutes on two servers at once, the used heap after a full GC (jcmd) and the PSS every minute, to a CSV and a
PNG in benchmarks/results/ (matplotlib, `make soak` installs it): the memory sink grows, sparkscope's sink does not.

`--candidates` measures, next to the memory sink, the floor of any foreachBatch-based sink (issue 46's "cheaper
foreachBatch"): pyspark's `foreachBatch` with a function that does nothing, so no round trip at all, only the
Python worker each query holds on the server.

Run: make bench  (or .venv/bin/python benchmarks/bench_server_cost.py [--minutes 60 | --candidates])
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from common import heap_used_mb, private_server_info

QUERIES = 8
RATE = 200
SAMPLE_AT = 90.0
CPU_WINDOW = 60.0
READS = 5
ROUNDS = 3


def tree(home: Path) -> list:
    """Every process of the server whose state dir is `home` (process_tree.Spawned: pid, command, PSS)."""
    from sparkscope.server.process_tree import spawned_by

    return spawned_by(home)


def pss_mb(processes: list) -> float:
    return sum(p.memory or 0 for p in processes) / 2**20


def cpu_seconds(pids: list[int]) -> float:
    from sparkscope.client.processes import cpu_seconds as of

    return sum(of(pid) or 0.0 for pid in pids)


FLOOR = "foreachBatch floor"  # a foreachBatch that does nothing: what any foreachBatch sink costs at least


class Side:
    """One way of starting QUERIES memory-backed append streams on one server."""

    def __init__(self, name: str, url: str):
        self.name, self.url = name, url
        self.handles: list = []

    def open(self) -> None:
        if self.name == "sparkscope":
            import sparkscope

            self.ss = sparkscope.connect(self.url)
            self.spark = self.ss.spark
        else:
            from pyspark.sql import SparkSession

            self.spark = SparkSession.builder.remote(self.url).create()

    def stream(self):
        return self.spark.readStream.format("rate").option("rowsPerSecond", RATE).load()

    def start(self, index: int):
        name = f"q{index}"
        if self.name == "sparkscope":
            return self.ss.start(self.stream(), name).handle
        if self.name == FLOOR:
            return self.stream().writeStream.foreachBatch(lambda df, batch_id: None).queryName(name).start()
        return self.stream().writeStream.format("memory").queryName(name).start()

    def read(self):
        """20 rows, as a pyspark user reads either sink: the query's name is a table."""
        return self.spark.table("q0").limit(20).collect()

    def peek(self):
        return self.ss.peek("q0", 20)

    def close(self) -> None:
        for handle in self.handles:
            with contextlib.suppress(Exception):  # the server is stopped right after
                handle.stop()
        if self.name == "sparkscope":
            self.ss.close()
        else:
            self.spark.stop()


def measure(side_name: str) -> dict[str, float]:
    with private_server_info() as info:
        home = Path(info.log).parent
        side = Side(side_name, info.url + (f"/;token={info.token}" if info.token else ""))
        side.open()
        time.sleep(5)  # the server settles after its start (a sample, not a synchronisation)
        idle = pss_mb(tree(home))
        started = time.perf_counter()
        for index in range(QUERIES):
            side.handles.append(side.start(index))
        starts = time.perf_counter() - started
        first = started
        time.sleep(max(0.0, first + SAMPLE_AT - CPU_WINDOW - time.perf_counter()))
        pids = [p.pid for p in tree(home)]
        cpu_before, window_started = cpu_seconds(pids), time.time()
        time.sleep(max(0.0, first + SAMPLE_AT - time.perf_counter()))
        processes = tree(home)
        cores = (cpu_seconds(pids) - cpu_before) / (time.time() - window_started)
        memory = pss_mb(processes)
        pythons = sum(p.kind == "Python worker" for p in processes)
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(window_started))
        batch_ms = [p.durationMs["triggerExecution"] for handle in side.handles for p in handle.recentProgress
                    if p.numInputRows and p.timestamp >= since]
        reads, peeks = [], []
        for _ in range(READS if side_name != FLOOR else 0):  # the floor keeps no rows to read
            for read, times in ((side.read, reads), *(((side.peek, peeks),) if side_name == "sparkscope" else ())):
                began = time.perf_counter()
                read()
                times.append(time.perf_counter() - began)
        side.close()
    return {"memory": memory, "per_query": (memory - idle) / QUERIES, "pythons": pythons, "cores": cores,
            "batch_ms": statistics.median(batch_ms) if batch_ms else float("nan"), "starts": starts,
            "read": statistics.median(reads) if reads else float("nan"),
            "peek": statistics.median(peeks) if peeks else float("nan")}


def warm_starts(side_name: str, together: bool) -> float:
    """QUERIES starts on a fresh server after one start (which pays the server's warm-up): one after another, or at
    once from threads; the wall time until every start returned."""
    with private_server_info() as info:
        side = Side(side_name, info.url + (f"/;token={info.token}" if info.token else ""))
        side.open()
        side.start(99).stop()
        began = time.perf_counter()
        if together:
            threads = [threading.Thread(target=lambda i=i: side.handles.append(side.start(i))) for i in range(QUERIES)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            side.handles = [side.start(index) for index in range(QUERIES)]
        took = time.perf_counter() - began
        assert len(side.handles) == QUERIES, f"{QUERIES - len(side.handles)} of the starts failed"
        side.close()
    return took


def one_run() -> None:
    """ROUNDS rounds, the two sides alternating which goes first: each figure the median of its rounds."""
    samples: dict[str, list[dict[str, float]]] = {"sparkscope": [], "pyspark": []}
    for round_ in range(ROUNDS):
        for side in (("sparkscope", "pyspark") if round_ % 2 == 0 else ("pyspark", "sparkscope")):
            samples[side].append(measure(side))
    ours, theirs = ({key: statistics.median(run[key] for run in runs) for key in runs[0]}
                    for runs in (samples["sparkscope"], samples["pyspark"]))
    print(f"{QUERIES} append streams of {RATE} rows/s each, sampled {SAMPLE_AT:.0f} s after the first start "
          f"(medians of {ROUNDS} rounds, each side on a fresh server):")
    rows = [("server memory (PSS)", "memory", "{:,.0f} MB"), ("memory per query", "per_query", "{:,.0f} MB"),
            ("server CPU", "cores", "{:.2f} cores"), ("median batch time", "batch_ms", "{:,.0f} ms"),
            (f"{QUERIES} starts, one after another", "starts", "{:.2f} s"),
            ("spark.table(name).limit(20).collect()", "read", "{:.3f} s")]
    for label, key, form in rows:
        ratios = ", ".join(f"{a[key] / b[key]:.2f}" for a, b in zip(samples["sparkscope"], samples["pyspark"],
                                                                    strict=True))
        print(f"  {label:<34} sparkscope {form.format(ours[key]):>12}   pyspark memory sink "
              f"{form.format(theirs[key]):>12}   {ours[key] / theirs[key]:.2f}x (rounds: {ratios})")
    print(f"  {'ss.peek(name, 20)':<34} sparkscope {ours['peek']:>10.3f} s   (three calls: the query, its rows "
          "and their schema)")
    print(f"  {'Python processes on the server':<34} sparkscope {ours['pythons']:>12.0f}   pyspark memory sink "
          f"{theirs['pythons']:>12.0f}")
    sequential, together = warm_starts("sparkscope", False), warm_starts("sparkscope", True)
    print(f"  {QUERIES} sparkscope starts on a warm server: at once {together:.2f} s, one after another "
          f"{sequential:.2f} s ({together / sequential:.2f}x)")


def candidates() -> None:
    """The foreachBatch floor next to the memory sink, ROUNDS rounds: what issue 46's cheaper foreachBatch could
    at best cost the server."""
    samples: dict[str, list[dict[str, float]]] = {FLOOR: [], "pyspark": []}
    for round_ in range(ROUNDS):
        for side in ((FLOOR, "pyspark") if round_ % 2 == 0 else ("pyspark", FLOOR)):
            samples[side].append(measure(side))
    floor, theirs = ({key: statistics.median(run[key] for run in runs) for key in runs[0]}
                     for runs in (samples[FLOOR], samples["pyspark"]))
    print(f"{QUERIES} append streams of {RATE} rows/s each, sampled {SAMPLE_AT:.0f} s after the first start "
          f"(medians of {ROUNDS} rounds):")
    for label, key, form in (("server memory (PSS)", "memory", "{:,.0f} MB"),
                             ("memory per query", "per_query", "{:,.0f} MB"), ("server CPU", "cores", "{:.2f} cores"),
                             ("median batch time", "batch_ms", "{:,.0f} ms"),
                             (f"{QUERIES} starts, one after another", "starts", "{:.2f} s"),
                             ("Python processes on the server", "pythons", "{:.0f}")):
        ratio = f"{floor[key] / theirs[key]:.2f}x" if theirs[key] else "-"
        print(f"  {label:<34} {FLOOR} {form.format(floor[key]):>12}   pyspark memory sink "
              f"{form.format(theirs[key]):>12}   {ratio}")


def long_run(minutes: int) -> None:
    """Both sides at once for `minutes`, one sample a minute: the memory sink's heap grows, the bounded sink's not."""
    out = Path(__file__).parent / "results" / f"server-cost-{time.strftime('%Y%m%d-%H%M')}.csv"
    out.parent.mkdir(exist_ok=True)
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(private_server_info()) for name in ("sparkscope", "pyspark")}
        sides = {}
        for name, info in servers.items():
            side = Side(name, info.url + (f"/;token={info.token}" if info.token else ""))
            side.open()
            side.handles = [side.start(index) for index in range(QUERIES)]
            sides[name] = side
        began = time.time()
        with open(out, "w") as csv:
            csv.write("minute,side,heap_mb,pss_mb\n")
            for minute in range(minutes + 1):
                time.sleep(max(0.0, began + minute * 60 - time.time()))
                for name, info in servers.items():
                    heap = heap_used_mb(info.pid)
                    pss = pss_mb(tree(Path(info.log).parent))
                    csv.write(f"{minute},{name},{heap:.1f},{pss:.1f}\n")
                    csv.flush()
                    print(f"minute {minute:3d} {name:<10} heap {heap:8.1f} MB  PSS {pss:8.1f} MB", flush=True)
        for side in sides.values():
            side.close()
    plot(out)


def plot(csv: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{csv} written (no matplotlib for the plot: make soak installs it)")
        return
    series: dict[str, list[tuple[int, float]]] = {}
    for line in csv.read_text().splitlines()[1:]:
        minute, side, heap, _ = line.split(",")
        series.setdefault(side, []).append((int(minute), float(heap)))
    for side, points in series.items():
        plt.plot([m for m, _ in points], [h for _, h in points],
                 label="sparkscope ss.start (bounded sink)" if side == "sparkscope" else "pyspark memory sink")
    plt.xlabel("minutes")
    plt.ylabel("server heap after a full GC (MB)")
    plt.title(f"{QUERIES} append streams of {RATE} rows/s each")
    plt.legend()
    png = csv.with_suffix(".png")
    plt.savefig(png, dpi=100)
    print(f"{csv} and {png} written")


if __name__ == "__main__":
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    if "--minutes" in sys.argv:
        long_run(int(sys.argv[sys.argv.index("--minutes") + 1]))
    elif "--candidates" in sys.argv:
        candidates()
    else:
        one_run()
