"""Embedded server: cold start and warm reuse, and the first result after a cold start, next to pyspark's
SparkSession.builder.remote("local[*]") (start, then spark.range(1).collect()).

Cold start: LocalServer.start in an empty state dir until the server answers, with the class archive
(server/class_cache.py) that the first server of this Java and pyspark recorded; the first start ever
(which records it, and whose stop writes it) is measured too. First result: the whole
`sparkscope -c "spark.range(3).count()"` command in an empty home (Python start-up, the server's cold
start, the session and the query) until it exits with the answer. Each figure is the median of RUNS
runs; the ratio is against pyspark's own local Connect start measured in the same runs.
Run: make bench  (or .venv/bin/python benchmarks/bench_startup.py)
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 3
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PYSPARK_LOCAL = """
import time
t = time.perf_counter()
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[*]").getOrCreate()
spark.range(1).collect()
print(time.perf_counter() - t)
spark.stop()
"""


def pyspark_local_start() -> float:
    out = subprocess.run([sys.executable, "-c", PYSPARK_LOCAL], capture_output=True, text=True, timeout=300)
    return float(out.stdout.strip().splitlines()[-1])


def first_result(class_cache: str) -> float:
    """`sparkscope -c` in an empty home: server cold start included; the server is stopped after."""
    import os

    sparkscope = str(Path(sys.executable).parent / "sparkscope")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "XDG_STATE_HOME": f"{home}/state", "XDG_CONFIG_HOME": f"{home}/config",
               "SPARKSCOPE_CLASS_CACHE": class_cache}
        env.pop("SPARK_REMOTE", None)
        t = time.perf_counter()
        out = subprocess.run([sparkscope, "--port", str(free_port()), "-c", "spark.range(3).count()"],
                             capture_output=True, text=True, timeout=300, env=env)
        took = time.perf_counter() - t
        subprocess.run([sparkscope, "server", "stop"], capture_output=True, timeout=120, env=env)
        if out.stdout.strip().splitlines()[-1:] != ["3"]:
            raise RuntimeError(f"unexpected answer: {out.stdout!r} {out.stderr!r}")
        return took


def free_port() -> int:
    from sparkscope.server.ports import free_port as pick

    return pick()


def phases(server, info) -> tuple[float, float, float]:
    """Where a start's time went, from the server's log (millisecond times): until the JVM logs
    "Starting Spark session" (the launcher, the JVM, class loading up to SparkSubmit and the server's
    main), until "Spark Connect server started" (SparkContext, the session, the Connect plugin), and
    until the first RPC was answered."""
    import datetime
    import re

    from sparkscope.server.log_file import START_MARKER

    text = server.log_path.read_text(errors="replace").rsplit(START_MARKER, 1)[-1]

    def when(marker: str) -> float:
        match = re.search(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}) \w+ \w+: " + re.escape(marker), text, re.M)
        assert match, f"no {marker!r} in the log"
        return datetime.datetime.strptime(match.group(1), "%y/%m/%d %H:%M:%S.%f").timestamp()

    session, connect = when("Starting Spark session"), when("Spark Connect server started")
    ready = info.started_at + info.startup_seconds
    return session - info.started_at, connect - session, ready - connect


def very_first_start(cache: str, at_once: bool) -> tuple[float, float | None, float, float]:
    """The very first start, in an empty home with no class archive: `sparkscope` in a pty, typing
    `spark.range(3).count()` at once (as a user may while the server starts), or once the session is open
    (when its catalog records it: the REPL is connected, and the toolbar says so). Returns the seconds to
    the prompt, to the session (None when typed at once), to the answer, and until the class archive was
    there (recorded in the background, once the server was idle, by a server of its own:
    class_recording.py)."""
    import os

    import pexpect

    from sparkscope.server.local import LocalServer

    sparkscope = str(Path(sys.executable).parent / "sparkscope")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "XDG_STATE_HOME": f"{home}/state", "XDG_CONFIG_HOME": f"{home}/config",
               "SPARKSCOPE_CLASS_CACHE": cache, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
        env.pop("SPARK_REMOTE", None)
        state = Path(home) / "state" / "sparkscope"
        try:
            t = time.perf_counter()
            child = pexpect.spawn(sparkscope, ["--port", str(free_port())], env=env, encoding="utf-8",
                                  dimensions=(40, 160), timeout=300)
            child.expect("sparkscope>")
            prompt = time.perf_counter() - t
            connected = None
            if not at_once:
                while not _session_recorded(state / "catalog.sqlite3"):  # polled: a measurement
                    time.sleep(0.01)
                connected = time.perf_counter() - t
            child.send("spark.range(3).count()\r")
            child.expect(r"(\n|\x1b\[\?2004l)3\r\n")  # the answer, on a line of its own
            answer = time.perf_counter() - t
            while (Path(cache) / "recorder.lock").exists():  # polled: how long the recording takes, off the path
                time.sleep(0.2)
            recorded = time.perf_counter() - t
            child.sendcontrol("d")
            child.expect(pexpect.EOF)
        finally:
            LocalServer(state).stop()
        if not list(Path(cache).glob("*.jsa")):
            raise RuntimeError("no class archive was recorded")
        return prompt, connected, answer, recorded


def _session_recorded(catalog: Path) -> bool:
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{catalog}?mode=ro", uri=True, timeout=0.1)) as db:
            return db.execute("SELECT count(*) FROM sessions").fetchone()[0] > 0
    except sqlite3.Error:
        return False  # not there yet


def main() -> None:
    import os

    from sparkscope.server.local import LocalServer

    cold, warm, baseline, first, very_prompt, very_connected, very_answer, recorded = [], [], [], [], [], [], [], []
    typed_at_once: list[float] = []
    split: list[tuple[float, float, float]] = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as cache:
            typed_at_once.append(very_first_start(cache, at_once=True)[2])
        with tempfile.TemporaryDirectory() as cache:
            prompt, connected, answer, took = very_first_start(cache, at_once=False)
            very_prompt.append(prompt)
            very_connected.append(connected or 0.0)
            very_answer.append(answer)
            recorded.append(took)
            os.environ["SPARKSCOPE_CLASS_CACHE"] = cache  # the archive the background server just recorded
            with tempfile.TemporaryDirectory() as home:
                server = LocalServer(Path(home))
                port = free_port()
                t = time.perf_counter()
                cold_info = server.start(port=port)
                cold.append(time.perf_counter() - t)
                split.append(phases(server, cold_info))
                t = time.perf_counter()
                info = server.start(port=port)
                warm.append(time.perf_counter() - t)
                assert info.reused and info.class_recording is None
                server.stop()
            os.environ.pop("SPARKSCOPE_CLASS_CACHE", None)
            baseline.append(pyspark_local_start())
            first.append(first_result(cache))
    c, w, b, f = (statistics.median(x) for x in (cold, warm, baseline, first))
    vp, vc, va, vr, vo = (statistics.median(x) for x in (very_prompt, very_connected, very_answer, recorded,
                                                          typed_at_once))
    print(f"embedded server cold start : {c:6.2f} s  ({c / b:.2f}x pyspark remote('local[*]'); with the class archive)")
    jvm, context, answer = (statistics.median(part[i] for part in split) for i in range(3))
    print(f"  of which: JVM and classes until Spark's main {jvm:.2f} s, SparkContext and the Connect plugin "
          f"{context:.2f} s, until the first RPC is answered {answer:.2f} s")
    print(f"very first start, empty home: prompt in {vp:.2f} s, connected in {vc:.2f} s; spark.range(3).count() "
          f"typed then answered at {va:.2f} s ({va / b:.2f}x), typed at once answered at {vo:.2f} s ({vo / b:.2f}x); "
          f"no class archive yet: recorded in the background once the server was idle, there after {vr:.1f} s")
    print(f"embedded server warm reuse : {w:6.3f} s  ({w / b:.3f}x pyspark remote('local[*]'))")
    print(f"first result, cold start   : {f:6.2f} s  ({f / b:.2f}x pyspark remote('local[*]'); "
          "sparkscope -c 'spark.range(3).count()')")
    print(f"pyspark remote('local[*]') : {b:6.2f} s  (baseline, median of {RUNS})")


if __name__ == "__main__":
    main()
