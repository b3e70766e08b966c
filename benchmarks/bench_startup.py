"""Embedded server: cold start and warm reuse, next to pyspark's SparkSession.builder.remote("local[*]").

Each figure is the median of RUNS runs; the ratio is against pyspark's own local Connect start
measured in the same run. Run: make bench  (or .venv/bin/python benchmarks/bench_startup.py)
"""

from __future__ import annotations

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


def main() -> None:
    from sparkscope.client.processes import free_port
    from sparkscope.client.server import LocalServer

    cold, warm, baseline = [], [], []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as home:
            server = LocalServer(Path(home))
            port = free_port()
            t = time.perf_counter()
            server.start(port=port)
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            info = server.start(port=port)
            warm.append(time.perf_counter() - t)
            assert info.reused
            server.stop()
        baseline.append(pyspark_local_start())
    c, w, b = (statistics.median(x) for x in (cold, warm, baseline))
    print(f"embedded server cold start : {c:6.2f} s  ({c / b:.2f}x pyspark remote('local[*]'))")
    print(f"embedded server warm reuse : {w:6.3f} s  ({w / b:.3f}x pyspark remote('local[*]'))")
    print(f"pyspark remote('local[*]') : {b:6.2f} s  (baseline, median of {RUNS})")


if __name__ == "__main__":
    main()
