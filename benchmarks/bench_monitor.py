"""Live monitoring: pushed events against polling, in latency, RPCs, CPU and memory.

Figures (each next to plain pyspark doing the same work in the same run):
  1. time from a batch's end to the dashboard having its row: listener vs a 1 s polling loop;
  2. RPCs per second while the dashboard shows 20 queries: listener vs polling;
  3. CPU used by `:watch` (the real REPL in a pty) over WATCH_SECONDS with 10 active queries;
  4. client memory after 10,000 progress events.
Run: make bench  (or .venv/bin/python benchmarks/bench_monitor.py); WATCH_SECONDS=60 by default.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import threading
import time
import tracemalloc

from common import RpcCounter, private_server

WATCH_SECONDS = float(os.environ.get("WATCH_SECONDS", "60"))
LATENCY_BATCHES = 12
RPC_WINDOW = 10.0


def batch_end(progress) -> float:
    from datetime import datetime

    started = datetime.fromisoformat(progress.timestamp.replace("Z", "+00:00")).timestamp()
    return started + (progress.batch_duration_ms or 0) / 1000


def dashboard_for(monitor):
    from prompt_toolkit.input import DummyInput
    from prompt_toolkit.output import DummyOutput

    from sparkscope.core.rendering.dashboard import Dashboard

    return Dashboard(monitor, None, lambda name: "", output=DummyOutput(), input=DummyInput())


def latency(ss) -> None:
    from sparkscope.client.monitoring.monitor import Monitor
    from sparkscope.client.monitoring.progress import Progress

    pushed, polled, plain = {}, {}, {}
    listener = ss.streams.monitor
    dash = dashboard_for(listener)

    def on_event(event) -> None:
        if event.kind == "progress" and event.name == "lat":
            dash._list()  # the row as :watch draws it
            pushed.setdefault(event.progress.batch_id, time.time() - batch_end(event.progress))

    listener.subscribe(on_event)
    poller = Monitor(ss, use_listener=False, poll_interval=1.0)
    poller.subscribe(lambda e: e.kind == "progress" and e.name == "lat" and polled.setdefault(
        e.progress.batch_id, time.time() - batch_end(e.progress)))
    query = ss.start(ss.source.rate(10), "lat", trigger="1 second")
    poller.start()
    stop = threading.Event()

    def plain_loop() -> None:  # what a pyspark user writes: poll lastProgress once a second
        while not stop.wait(1.0):
            last = query.handle.lastProgress
            if last is not None:
                progress = Progress.from_json(json.loads(last.json))
                plain.setdefault(progress.batch_id, time.time() - batch_end(progress))

    threading.Thread(target=plain_loop, daemon=True).start()
    while min(len(pushed), len(polled), len(plain)) < LATENCY_BATCHES:
        time.sleep(0.5)
    stop.set()
    poller.close()
    query.stop()
    skip = sorted(pushed)[2:]  # the first batches include query start-up
    med = {name: statistics.median(v for k, v in data.items() if k in skip) * 1000
           for name, data in (("listener", pushed), ("polling", polled), ("plain", plain))}
    print(f"batch end -> row on screen, listener      : {med['listener']:7.1f} ms  "
          f"({med['listener'] / med['plain']:.3f}x plain pyspark 1 s polling)")
    print(f"batch end -> row on screen, 1 s polling   : {med['polling']:7.1f} ms  "
          f"({med['polling'] / med['plain']:.2f}x)")
    print(f"plain pyspark lastProgress loop, 1 s      : {med['plain']:7.1f} ms  (baseline, median of "
          f"{len(skip)} batches)")


def rpcs(ss) -> None:
    from sparkscope.client.monitoring.monitor import Monitor

    counter = RpcCounter(ss.spark)
    queries = [ss.start(ss.source.rate(1), f"rpc{i}", trigger="2 seconds") for i in range(20)]
    time.sleep(3)
    spark = ss.spark
    started = time.time()
    before, before_acks = counter.count, counter.acks()
    while time.time() - started < RPC_WINDOW:  # a pyspark loop that shows the same columns once a second
        for handle in spark.streams.active:
            _ = handle.lastProgress, handle.status
        time.sleep(1.0)
    seconds = time.time() - started
    plain, plain_acks = (counter.count - before) / seconds, (counter.acks() - before_acks) / seconds

    poller = Monitor(ss, use_listener=False, poll_interval=1.0).start()
    dash = dashboard_for(poller)
    stop = threading.Event()

    def redraw_loop() -> None:  # the dashboard redraws at least once a second
        while not stop.wait(0.25):
            dash._list()

    threading.Thread(target=redraw_loop, daemon=True).start()
    polled, polled_acks = counter.rate_over(RPC_WINDOW)
    poller.close()
    dash.monitor = ss.streams.monitor
    time.sleep(2)
    pushed, pushed_acks = counter.rate_over(RPC_WINDOW)
    listener_ok = len([t for t in ss.streams.monitor.tracks() if t.name.startswith("rpc") and t.latest]) == 20
    stop.set()
    for query in queries:
        query.stop()
    print(f"RPCs/s, dashboard of 20 queries, listener  : {pushed:7.2f}  ({pushed / plain:.3f}x plain pyspark loop)"
          f"  + {pushed_acks:.1f}/s ReleaseExecute acks pyspark sends per streamed event"
          + ("" if listener_ok else "  [listener missed queries!]"))
    print(f"RPCs/s, dashboard of 20 queries, polling   : {polled:7.2f}  ({polled / plain:.2f}x)  + {polled_acks:.1f}/s acks")
    print(f"RPCs/s, plain lastProgress+status per 1 s  : {plain:7.2f}  (baseline)  + {plain_acks:.1f}/s acks")


WATCHER = """
import json, sys, time
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
qs = [spark.readStream.format("rate").option("rowsPerSecond", 10).load().writeStream.format("memory")
      .queryName(f"plain{i}").trigger(processingTime="1 second").start() for i in range(10)]
print("ready", flush=True)
deadline = time.time() + float(sys.argv[2])
while time.time() < deadline:
    rows = []
    for q in spark.streams.active:
        p, s = q.lastProgress, q.status
        rows.append((q.name, p["batchId"] if p else "-", p["inputRowsPerSecond"] if p else "-", s["message"]))
    print("\\x1b[H\\x1b[2J" + "\\n".join(map(str, rows)), flush=True)
    time.sleep(1)
for q in qs:
    q.stop()
"""


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu(url: str) -> None:
    import subprocess
    import sys

    import pexpect

    from sparkscope.client.paths import state_dir  # noqa: F401 - same interpreter as the product

    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm", "LINES": "40", "COLUMNS": "160"}
    child = pexpect.spawn(os.path.join(os.path.dirname(sys.executable), "sparkscope"), ["--remote", url],
                          env=env, encoding="utf-8", dimensions=(40, 160), timeout=120)
    child.expect("sparkscope>")
    child.send('[ss.start(ss.source.rate(10), f"w{i}", trigger="1 second") for i in range(10)]\r')
    child.expect("sparkscope>", timeout=120)
    child.send(":watch\r")
    child.expect("live \\(listener\\)", timeout=60)
    time.sleep(3)
    before = cpu_seconds(child.pid)
    deadline = time.time() + WATCH_SECONDS
    while time.time() < deadline:  # keep reading, as a terminal would
        with contextlib.suppress(pexpect.TIMEOUT):
            child.read_nonblocking(100_000, timeout=0.5)
    watch_cpu = cpu_seconds(child.pid) - before
    child.send("q")
    child.expect("sparkscope>")
    child.send(":stop --all\r")
    child.expect("Stopped 10")
    child.expect("sparkscope>")
    time.sleep(1)
    child.sendcontrol("d")
    if child.expect([pexpect.EOF, r"\[y/N\]"], timeout=60) == 1:
        child.send("y\r")
        child.expect(pexpect.EOF, timeout=60)

    plain = subprocess.Popen([sys.executable, "-c", WATCHER, url, str(WATCH_SECONDS + 3)], stdout=subprocess.PIPE,
                             text=True)
    assert plain.stdout.readline().strip() == "ready"
    time.sleep(3)
    before = cpu_seconds(plain.pid)
    started = time.time()
    while time.time() - started < WATCH_SECONDS:
        plain.stdout.readline()
    plain_cpu = cpu_seconds(plain.pid) - before
    plain.stdout.read()
    plain.wait(60)
    print(f"CPU of :watch, 10 queries, {WATCH_SECONDS:.0f} s          : {watch_cpu:6.2f} s  "
          f"({watch_cpu / plain_cpu:.2f}x a plain pyspark 1 s polling table)")
    print(f"CPU of plain pyspark polling table        : {plain_cpu:6.2f} s  (baseline)")


def memory(ss) -> None:
    from pyspark.sql.streaming.listener import QueryProgressEvent

    from sparkscope.client.monitoring.monitor import Monitor
    from sparkscope.client.monitoring.progress import Progress

    query = ss.start(ss.source.rate(10).groupBy("value").count(), "mem", trigger="500 milliseconds")
    while query.progress is None or query.progress.batch_id < 2:
        time.sleep(0.2)
    sample = dict(query.progress.raw)
    query.stop()
    sample.setdefault("numInputRows", 10)
    texts = [json.dumps({**sample, "batchId": i}) for i in range(10_000)]

    monitor = Monitor(ss, use_listener=False)
    tracemalloc.start()
    base = tracemalloc.take_snapshot()
    for text in texts:
        monitor.on_progress(Progress.from_json(text))
    ours = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(base, "filename"))
    tracemalloc.stop()

    kept = []
    tracemalloc.start()
    base = tracemalloc.take_snapshot()
    for text in texts:  # a plain listener that keeps every event it is given
        kept.append(QueryProgressEvent.fromJson({"progress": json.loads(text)}))
    plain = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(base, "filename"))
    tracemalloc.stop()
    print(f"memory after 10,000 progress events       : {ours / 1e6:6.2f} MB  ({ours / plain:.3f}x a plain listener "
          f"keeping every event; {len(monitor.history('mem'))} batches kept)")
    print(f"plain pyspark listener keeping all events : {plain / 1e6:6.2f} MB  (baseline)")


def main() -> None:
    import sparkscope

    only = os.environ.get("ONLY")  # e.g. ONLY=cpu to rerun one part
    with private_server() as url:
        with sparkscope.connect(url) as ss:
            for part in (latency, rpcs, memory):
                if not only or only == part.__name__:
                    part(ss)
        if not only or only == "cpu":
            cpu(url)


if __name__ == "__main__":
    main()
