"""Soak: 20 queries for an hour with :watch open, sampled over time. Not part of `make test` or `make bench`.

A private embedded server runs 20 queries started by this process's SDK session: 12 windowed
aggregations (6 in update mode with a watermark, 6 in complete mode over 10 keys), 6 raw append streams
and 2 stream-stream joins, all into their default sinks, at rates that keep two cores busy but not
saturated. A real `sparkscope` REPL joins the same session in a pseudo-terminal and shows `:watch` for
the whole run. Every SAMPLE seconds one row goes to the CSV:
- the REPL's resident size and CPU share (the client with the dashboard open), and where its memory is:
  the glibc heap mapping ([heap]) and all anonymous memory (/proc/PID/smaps), and its thread count, so
  that growth outside Python's objects (which tracemalloc cannot see) shows where it is
- the server's used heap after a full collection (jcmd), its resident size, and its Python workers'
- the SDK monitor's history size (progress records kept over all queries)
- the latency of ss.peek (20 rows, a different query each time) and of ss.streams.queries() (medians of 3)
- the queries whose newest batch on the server is more than 2 batches ahead of what the monitor heard
  (a listener that dropped unnoticed would show here), and the monitor's mode and re-registrations
The CSV and a PNG of it go to benchmarks/results/; the summary says, per figure, the first and last
tenth's means and whether it stayed flat (within 10%, or within a small absolute margin), and for the
client's RSS and CPU whether they stayed within ±10% of their mean over the last 30 minutes (5-minute means).
Run: make soak  (SOAK_MINUTES=60 by default; .venv/bin/python benchmarks/soak.py [MINUTES])
"""

from __future__ import annotations

import csv
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from common import ROOT, children, heap_used_mb, private_server_info, rss_mb

MINUTES = float(sys.argv[1]) if len(sys.argv) > 1 else float(os.environ.get("SOAK_MINUTES", "60"))
SAMPLE = 30.0 if MINUTES >= 10 else 10.0
RATE = 100  # rows/s per source
TRIGGER = "10 seconds"  # 20 queries of a few Spark jobs per batch: two busy cores, not saturated
RESULTS = ROOT / "benchmarks" / "results"
# figure: (absolute margin under which a change counts as flat)
FIGURES = {"client_rss_mb": 15, "client_cpu_pct": 5, "server_heap_mb": 50, "server_rss_mb": 150,
           "workers_rss_mb": 100, "monitor_history": 0, "peek_ms": 20, "queries_ms": 20, "listener_behind": 0,
           "client_heap_mb": 10, "client_anon_mb": 15, "client_threads": 2}
LAST_WINDOW = 30.0  # minutes: the plateau is judged over the end of the run


def start_queries(ss) -> list:
    from pyspark.sql import functions as F

    spark = ss.spark

    def rate(name: str):
        return spark.readStream.format("rate").option("rowsPerSecond", RATE).load() \
            .withColumn("key", F.col("value") % 10).withColumn("src", F.lit(name))

    queries = []
    for i in range(6):
        windowed = rate(f"w{i}").withWatermark("timestamp", "10 seconds") \
            .groupBy(F.window("timestamp", "10 seconds"), "key").count()
        queries.append(ss.start(windowed, f"windows_{i}", mode="update", trigger=TRIGGER))
    for i in range(6):
        queries.append(ss.start(rate(f"k{i}").groupBy("key").agg(F.count("*").alias("n"), F.max("value").alias("top")),
                                f"keys_{i}", trigger=TRIGGER))
    for i in range(6):
        queries.append(ss.start(rate(f"r{i}").selectExpr("timestamp", "value", "key", "value * 2 AS doubled"),
                                f"raw_{i}", trigger=TRIGGER))
    for i in range(2):
        left = rate(f"l{i}").withWatermark("timestamp", "10 seconds").selectExpr("key AS lk", "timestamp AS lt")
        right = rate(f"q{i}").withWatermark("timestamp", "10 seconds").selectExpr("key AS rk", "timestamp AS rt")
        joined = left.join(right, F.expr("lk = rk AND rt BETWEEN lt AND lt + INTERVAL 1 SECOND"))
        queries.append(ss.start(joined, f"join_{i}", trigger=TRIGGER))
    return queries


class Repl:
    """The real sparkscope REPL in a pty, joined to the session, showing :watch; its output is drained."""

    def __init__(self, url: str, session_id: str):
        import pexpect

        self.child = pexpect.spawn(str(Path(sys.executable).parent / "sparkscope"),
                                   ["--remote", url, "--session-id", session_id], encoding="utf-8",
                                   dimensions=(40, 160), env={**os.environ, "TERM": "xterm-256color"},
                                   timeout=120)
        self.child.expect("sparkscope>")
        self.child.send(":watch\r")
        self.child.expect("sparkscope :watch")  # the dashboard is up
        self.running = True
        threading.Thread(target=self._drain, daemon=True).start()
        self._cpu = self._cpu_seconds(), time.monotonic()

    def _drain(self) -> None:
        while self.running:
            try:
                self.child.read_nonblocking(65536, timeout=1)
            except Exception:  # pexpect.TIMEOUT between redraws; EOF when it ends
                if not self.child.isalive():
                    return

    def _cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def cpu_pct(self) -> float:
        now = self._cpu_seconds(), time.monotonic()
        used = (now[0] - self._cpu[0]) / max(now[1] - self._cpu[1], 1e-6) * 100
        self._cpu = now
        return used

    def rss_mb(self) -> float:
        return rss_mb(self.child.pid)

    def memory(self) -> dict:
        """The glibc heap mapping and all anonymous memory (MB, resident), and the thread count."""
        heap = anon = 0
        mapping = ""
        for line in Path(f"/proc/{self.child.pid}/smaps").read_text().splitlines():
            if not line[0].isupper():  # a mapping's header: address range, perms, offset, dev, inode, path
                mapping = line.split()[5] if len(line.split()) > 5 else ""
            elif line.startswith("Rss:") and mapping == "[heap]":
                heap += int(line.split()[1])
            elif line.startswith("Anonymous:"):
                anon += int(line.split()[1])
        threads = len(list(Path(f"/proc/{self.child.pid}/task").iterdir()))
        return {"client_heap_mb": round(heap / 1024, 1), "client_anon_mb": round(anon / 1024, 1),
                "client_threads": threads}

    def close(self) -> None:
        self.child.send("q")
        self.child.send(":quit\r")
        self.child.sendline("y")
        self.child.expect(pexpect_eof(), timeout=60)
        self.running = False


def pexpect_eof():
    import pexpect

    return pexpect.EOF


def median_ms(fn, runs: int = 3) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def behind(ss, queries) -> int:
    """Queries whose newest batch on the server is more than 2 batches past what the monitor heard."""
    count = 0
    for query in queries:
        track = ss.streams.monitor.track(query.id)
        heard = track.latest.batch_id if track and track.latest else -1
        progress = query.progress
        if progress is not None and progress.batch_id - heard > 2:
            count += 1
    return count


def sample(ss, info, repl, queries, started: float, turn: int) -> dict:
    name = queries[turn % len(queries)].name
    return {
        "minute": round((time.monotonic() - started) / 60, 2),
        "client_rss_mb": round(repl.rss_mb(), 1),
        "client_cpu_pct": round(repl.cpu_pct(), 1),
        **repl.memory(),
        "server_heap_mb": round(heap_used_mb(info.pid), 1),
        "server_rss_mb": round(rss_mb(info.pid), 1),
        "workers_rss_mb": round(sum(rss_mb(pid) for pid in children(info.pid)), 1),
        "monitor_history": sum(len(track.history) for track in ss.streams.monitor.tracks()),
        "peek_ms": round(median_ms(lambda: ss.peek(name, 20)), 1),
        "queries_ms": round(median_ms(ss.streams.queries), 1),
        "listener_behind": behind(ss, queries),
        "monitor_mode": ss.streams.monitor.mode,
        "reregistered": ss.streams.monitor.reregistered,
        "active": sum(1 for q in queries if q.is_active),
    }


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = list(FIGURES)
    fig, axes = plt.subplots(3, 4, figsize=(20, 10), sharex=True)
    minutes = [row["minute"] for row in rows]
    for axis, figure in zip(axes.flat, figures, strict=False):
        axis.plot(minutes, [row[figure] for row in rows])
        axis.set_title(figure)
        axis.set_ylim(bottom=0)
    for axis in axes[-1]:
        axis.set_xlabel("minutes")
    fig.suptitle(f"sparkscope soak: 20 queries, :watch open, {rows[-1]['minute']:.0f} minutes")
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def verdicts(rows: list[dict]) -> list[str]:
    tenth = max(1, len(rows) // 10)
    lines = []
    for figure, margin in FIGURES.items():
        first = statistics.mean(row[figure] for row in rows[1:tenth + 1] or rows[:1])  # after the warm-up sample
        last = statistics.mean(row[figure] for row in rows[-tenth:])
        change = last - first
        flat = change <= margin or (first > 0 and change / first <= 0.10)  # only growth counts against
        lines.append(f"{figure:16} first tenth {first:9.1f}   last tenth {last:9.1f}   "
                     f"{'flat' if flat else 'NOT flat'} ({change:+.1f})")
    end = rows[-1]["minute"]
    window = [row for row in rows if row["minute"] >= end - LAST_WINDOW]
    if end >= LAST_WINDOW + 5:
        for figure in ("client_rss_mb", "client_cpu_pct"):
            means = [statistics.mean(row[figure] for row in window if start <= row["minute"] < start + 5)
                     for start in range(int(end - LAST_WINDOW), int(end) - 4, 5)]
            mean = statistics.mean(row[figure] for row in window)
            spread = max(abs(m - mean) for m in means) / mean * 100 if mean else 0.0
            lines.append(f"{figure:16} last {LAST_WINDOW:.0f} min: 5-minute means {', '.join(f'{m:.1f}' for m in means)}"
                         f" around {mean:.1f}: {'within' if spread <= 10 else 'NOT within'} ±10% ({spread:.1f}%)")
    return lines


def main() -> None:
    import sparkscope

    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M")
    csv_path, png_path = RESULTS / f"soak-{stamp}.csv", RESULTS / f"soak-{stamp}.png"
    rows: list[dict] = []
    with private_server_info() as info, sparkscope.connect(f"sc://localhost:{info.port}") as ss:
        queries = start_queries(ss)
        ss.streams.monitor  # noqa: B018 - listening from the start
        repl = Repl(f"sc://localhost:{info.port}", ss.session_id)
        started = time.monotonic()
        turn = 0
        try:
            while time.monotonic() - started < MINUTES * 60:
                rows.append(sample(ss, info, repl, queries, started, turn))
                turn += 1
                print(", ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
                next_at = started + turn * SAMPLE
                while time.monotonic() < next_at:
                    time.sleep(0.5)
        finally:
            repl.close()
            with open(csv_path, "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    plot(rows, png_path)
    print(f"\n{len(rows)} samples over {rows[-1]['minute']:.1f} minutes -> {csv_path.name}, {png_path.name}")
    print(f"queries still active at the end: {rows[-1]['active']} of 20; monitor mode {rows[-1]['monitor_mode']}, "
          f"re-registered {rows[-1]['reregistered']} times")
    for line in verdicts(rows):
        print(line)


if __name__ == "__main__":
    main()
