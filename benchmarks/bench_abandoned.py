"""What clients that leave without closing cost a shared server, and what one large batch costs it (issue 54):
sparkscope's default `ss.start` next to the same clients written by hand with Spark's memory sink, each side on a
fresh embedded server, in one run.

Abandoned clients: CLIENTS clients in turn, each in a process of its own, start one stream of 1 KB rows (RATE rows/s)
and wait until ROWS rows went through it, then leave without closing anything: half by os._exit, half by kill -9.
Every other client's query is then stopped from another session (plain pyspark, joined by session id, as a second
user of the session would); the others are stopped by the server itself when their session times out (set to
SESSION_TIMEOUT for the bench, with sparkscope's grace period GRACE). Measured on each side:
- the heap after a full GC (jcmd GC.run, then GC.heap_info), after one warm-up client that closes (the baseline),
  after each client, and once every session timed out and the grace period passed;
- the scratch checkpoints left in the server's temporary folder;
- the threads of sparkscope (sparkscope-*) and stream execution threads left, and the class loaders of sessions.
The target: the heap back within 10% of the baseline or 16 MB, whichever is larger, none left of the rest.

One large batch: an available-now read of BIG_ROWS rows of parquet into a default `ss.start`, on a server with
spark.driver.maxResultSize=64m, next to the same read into Spark's memory sink on a server of its own: whether it
completes, and the heap after a full GC before and after.

Both curves go to benchmarks/results/abandoned-<time>.csv.

Run: .venv/bin/python benchmarks/bench_abandoned.py [--clients 50]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, heap_used_mb, private_server_info

CLIENTS = 50
SIDES = ("sparkscope", "noop sink", "memory sink")  # the noop sink keeps nothing: the floor of any sink
RATE = 2000
ROWS = 20_000
SESSION_TIMEOUT = "20s"
GRACE = "10s"
BIG_ROWS = 20_000_000
SETTLE_DEADLINE = 180.0  # seconds to wait for the sessions to time out and the grace period to pass

CLIENT = r"""
import os, signal, sys, time
url, side, how, name, rate, rows = sys.argv[1:7]
rate, rows = int(rate), int(rows)
if side == "sparkscope":
    import sparkscope
    ss = sparkscope.connect(url)
    spark, session = ss.spark, ss.session_id
else:
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(url).create()
    session = spark.client._session_id
df = spark.readStream.format("rate").option("rowsPerSecond", rate).load().selectExpr("value", "repeat('x', 1000) AS pad")
query = (ss.start(df, name) if side == "sparkscope" else
         df.writeStream.format("noop" if side == "noop sink" else "memory").queryName(name).start())
handle = query.handle if side == "sparkscope" else query
while sum(p.numInputRows for p in handle.recentProgress) < rows:
    handle.awaitTermination(0.5)
print(session, flush=True)
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
os._exit(0)
"""


def connect_url(info) -> str:
    return f"sc://localhost:{info.port}"


def run_client(url: str, side: str, how: str, name: str) -> str:
    ran = subprocess.run([sys.executable, "-c", CLIENT, url, side, how, name, str(RATE), str(ROWS)],
                         capture_output=True, text=True, timeout=300)
    words = ran.stdout.split()
    if not words:
        raise RuntimeError(f"client {name} failed: {ran.stderr[-2000:]}")
    return words[-1]


def stop_in(url: str, session: str) -> None:
    """Another session of the server stops the queries of `session`: plain pyspark, joined by its id, and left
    without releasing it (a release would end the session, and with it its memory sink's table)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(f"{url}/;session_id={session}").create()
    for query in spark.streams.active:
        query.stop()
    spark.client.close()  # the channel only: no release, and no exit hook that calls a server long gone


def jvm_counts(pid: int) -> dict[str, int]:
    """Threads of sparkscope and of streaming queries, and class loaders of Spark Connect sessions, in the JVM."""
    threads = subprocess.run(["jcmd", str(pid), "Thread.print"], capture_output=True, text=True, timeout=60).stdout
    loaders = subprocess.run(["jcmd", str(pid), "GC.class_histogram"], capture_output=True, text=True,
                             timeout=120).stdout
    session_loaders = sum(int(match.group(1)) for match in
                          re.finditer(r"^\s*\d+:\s+(\d+)\s+\d+\s+org\.apache\.spark\.util\.(ChildFirst|Mutable)URLClassLoader",
                                      loaders, re.M))
    return {"sparkscope threads": len(re.findall(r'^"sparkscope-', threads, re.M)),
            "stream threads": len(re.findall(r'^"stream execution thread', threads, re.M)),
            "session class loaders": session_loaders}


def scratch_checkpoints(home: Path) -> int:
    return len(list((home / "tmp").glob("sparkscope-checkpoint-*"))) if (home / "tmp").exists() else 0


def kept_on(url: str) -> int:
    """How many rings and feeds sparkscope's jar keeps on the server (from a new session of its own)."""
    import sparkscope

    with sparkscope.connect(url) as ss:
        return len(ss.kept())


def abandoned(side: str, clients: int, stack: contextlib.ExitStack) -> dict:
    """Run the clients of one side on a fresh server, which stays up (in `stack`) to be measured as it settles."""
    conf = {"spark.connect.session.manager.defaultSessionTimeout": SESSION_TIMEOUT,
            "spark.connect.session.manager.maintenanceInterval": "5s", "spark.sparkscope.grace": GRACE}
    if side == "sparkscope":  # no checkpoint root: each ring makes its query a scratch checkpoint, to be removed
        conf["spark.sql.streaming.checkpointLocation"] = ""
    info = stack.enter_context(private_server_info(conf))
    url = connect_url(info)
    home = Path(info.log).parent
    session = run_client(url, side, "exit", "warm_up")
    stop_in(url, session)
    time.sleep(float(SESSION_TIMEOUT.rstrip("s")) + float(GRACE.rstrip("s")) + 10)  # the warm-up's end, measured
    baseline = heap_used_mb(info.pid)
    before = jvm_counts(info.pid)
    curve = [baseline]
    scratch_seen = 0
    for index in range(clients):
        session = run_client(url, side, "kill" if index % 2 else "exit", f"client{index}")
        scratch_seen = max(scratch_seen, scratch_checkpoints(home))
        if index % 2 == 0:
            stop_in(url, session)
        curve.append(heap_used_mb(info.pid))
    return {"side": side, "info": info, "url": url, "home": home, "baseline": baseline, "curve": curve,
            "before": before, "scratch_seen": scratch_seen}


def settled(side: dict) -> None:
    """Once every session timed out (their queries end with them) and the grace period passed: the heap, what is
    left, and what the jar still keeps."""
    pid = side["info"].pid
    deadline = time.monotonic() + SETTLE_DEADLINE
    while time.monotonic() < deadline and jvm_counts(pid)["stream threads"] > side["before"]["stream threads"]:
        time.sleep(2)
    time.sleep(float(GRACE.rstrip("s")) + 3)
    side.update(end=heap_used_mb(pid), after=jvm_counts(pid), scratch=scratch_checkpoints(side["home"]),
                kept=kept_on(side["url"]) if side["side"] == "sparkscope" else None)


def large_batch(side: str, folder: str) -> dict:
    with private_server_info({"spark.driver.maxResultSize": "64m"}) as info:
        url = connect_url(info)
        import sparkscope

        with sparkscope.connect(url) as ss:
            df = ss.spark.readStream.schema("id BIGINT, k BIGINT, s STRING").parquet(folder)
            before = heap_used_mb(info.pid)
            started = time.perf_counter()
            try:
                if side == "sparkscope":
                    query = ss.start(df, "big", trigger="available-now")
                    query.await_termination(timeout=900)
                    failure = query.exception
                    kept = next(item for item in ss.kept() if item.query == "big")
                    detail = f"{kept.rows:,} rows kept, {kept.last_batch_received:,} sent to the driver"
                else:
                    handle = df.writeStream.format("noop" if side == "noop sink" else "memory").queryName("big") \
                        .trigger(availableNow=True).start()
                    handle.awaitTermination(900)
                    failure = handle.exception()
                    detail = "nothing kept" if side == "noop sink" else "every row kept"
            except Exception as exc:  # noqa: BLE001 - what the side ended with is the figure
                failure, detail = exc, ""
            seconds = time.perf_counter() - started
            try:
                grown: float | None = heap_used_mb(info.pid) - before
            except subprocess.CalledProcessError:  # the JVM is gone: it exited on an OutOfMemoryError
                grown, failure = None, failure or "the server's JVM died"
        return {"side": side, "seconds": seconds, "grown": grown, "failure": str(failure)[:200] if failure else None,
                "detail": detail}


def report(sides: list[dict], args: argparse.Namespace) -> None:
    stamp = time.strftime("%Y%m%d-%H%M")
    results = ROOT / "benchmarks" / "results" / f"abandoned-{stamp}.csv"
    with results.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["clients", *(f"{s['side']} heap MB" for s in sides)])
        for index in range(args.clients + 1):
            writer.writerow([index, *(f"{s['curve'][index]:.1f}" for s in sides)])
        writer.writerow(["settled", *(f"{s['end']:.1f}" for s in sides)])
        if args.settle_minutes:
            writer.writerow([f"after {args.settle_minutes} min", *(f"{s['late']:.1f}" for s in sides)])
    floor = next(s for s in sides if s["side"] == "noop sink")
    print(f"{args.clients} clients that leave without closing, each side on a fresh server ({results.name}):")
    for s in sides:
        growth = s["end"] - s["baseline"]
        target = max(0.10 * s["baseline"], 16.0)
        over_floor = growth - (floor["end"] - floor["baseline"])
        print(f"  {s['side']:<12} heap {s['baseline']:6.1f} MB -> {max(s['curve']):6.1f} MB at most -> "
              f"{s['end']:6.1f} MB settled ({growth:+.1f} MB, {over_floor:+.1f} MB over the noop sink's; target "
              f"{target:.0f} MB: {'met' if growth <= target else 'missed'})" + (
                  f"; after {args.settle_minutes} min {s['late']:.1f} MB ({s['late'] - s['baseline']:+.1f} MB)"
                  if args.settle_minutes else ""))
        print(f"  {'':<12} scratch checkpoints: {s['scratch_seen']} at most, {s['scratch']} left"
              + ("" if s["kept"] is None else f"; rings and feeds kept: {s['kept']}") + "; before -> after: "
              + ", ".join(f"{key} {s['before'][key]} -> {s['after'][key]}" for key in s["after"]))


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--settle-minutes", type=float, default=0,
                        help="then wait this long and measure again (Spark Connect keeps a stopped query an hour)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ.update(XDG_STATE_HOME=f"{home}/state", XDG_CONFIG_HOME=f"{home}/config",
                          XDG_CACHE_HOME=f"{home}/cache")  # the clients' catalog, not the user's
        with contextlib.ExitStack() as stack:
            sides = [abandoned(side, args.clients, stack) for side in SIDES]
            for side in sides:
                settled(side)
            if args.settle_minutes:  # Spark Connect keeps each stopped query in its cache for an hour
                time.sleep(args.settle_minutes * 60)
                for side in sides:
                    side["late"] = heap_used_mb(side["info"].pid)
        report(sides, args)
        folder = f"{home}/big"
        import sparkscope

        with private_server_info() as info, sparkscope.connect(connect_url(info)) as ss:
            ss.spark.range(BIG_ROWS).selectExpr("id", "id % 1000 AS k", "cast(id AS string) AS s") \
                .write.parquet(folder)
        print(f"One batch of {BIG_ROWS:,} rows (available-now, parquet), spark.driver.maxResultSize=64m:")
        for side in SIDES:
            s = large_batch(side, folder)
            heap = "the server died" if s["grown"] is None else f"heap after a full GC {s['grown']:+.1f} MB"
            print(f"  {s['side']:<12} {'completed' if not s['failure'] else 'FAILED: ' + s['failure']} in "
                  f"{s['seconds']:.1f} s; {heap}; {s['detail']}")


if __name__ == "__main__":
    main()
