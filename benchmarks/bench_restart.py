"""Restarting a query from the catalog against re-running it by hand in plain pyspark.

The figure: time from `ss.restart(name)` (what :restart runs) to the first new batch, against plain
pyspark rebuilding the same DataFrame in code and starting it with the same kind of checkpoint. Both
wait for the batch the same way (lastProgress every 20 ms). A windowed count over a JSON file source
into a parquet sink; median of RUNS.
Run: make bench  (or .venv/bin/python benchmarks/bench_restart.py)
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from common import private_server

RUNS = 5


def add_file(folder: Path, index: int) -> None:
    tmp = folder.parent / f".{index}.json"
    tmp.write_text("".join(json.dumps({"time": f"2024-01-01 10:{m:02d}:00", "action": "e"}) + "\n" for m in range(5)))
    tmp.rename(folder / f"{index}.json")


def counts(spark, folder: Path):
    from pyspark.sql import functions as F

    return (spark.readStream.schema("time TIMESTAMP, action STRING").option("maxFilesPerTrigger", 1)
            .json(str(folder)).withWatermark("time", "1 hour")
            .groupBy(F.window("time", "1 hour"), "action").count())


def first_new_batch(handle, after: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        last = handle.lastProgress
        if last is not None and last.batchId > after:
            return
        time.sleep(0.02)
    raise SystemExit("no new batch within 120 s")


def main() -> None:
    import sparkscope
    from pyspark.sql.connect.session import SparkSession

    with private_server() as url, tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        ss = sparkscope.connect(url)
        plain = SparkSession.builder.remote(url).create()
        ours, theirs = [], []
        for run in range(RUNS):
            # sparkscope: started once, stopped, then restarted from the catalog
            data, out = root / f"ss{run}", root / f"ss{run}-out"
            data.mkdir()
            add_file(data, 0)
            name = f"bench_restart_{run}"
            query = ss.start(counts(ss.spark, data), name, sink="parquet", path=str(out))
            query.process_all_available()
            last = query.progress.batch_id
            query.stop()
            add_file(data, 1)
            started = time.perf_counter()
            again = ss.restart(name)
            first_new_batch(again.handle, last)
            ours.append(time.perf_counter() - started)
            again.stop()

            # plain pyspark: the same query, rebuilt in code, with its own checkpoint
            data, out, checkpoint = root / f"py{run}", root / f"py{run}-out", root / f"py{run}-ckpt"
            data.mkdir()
            add_file(data, 0)
            def writer(data=data, checkpoint=checkpoint):
                return (counts(plain, data).writeStream.format("parquet")
                        .option("checkpointLocation", str(checkpoint)).outputMode("append"))

            handle = writer().start(str(out))
            handle.processAllAvailable()
            last = handle.lastProgress.batchId
            handle.stop()
            add_file(data, 1)
            started = time.perf_counter()
            handle = writer().start(str(out))
            first_new_batch(handle, last)
            theirs.append(time.perf_counter() - started)
            handle.stop()
        ss.close()
        plain.stop()
    mine, base = statistics.median(ours), statistics.median(theirs)
    print(f":restart to first new batch  : {mine:6.3f} s  ({mine / base:.2f}x plain pyspark)")
    print(f"plain pyspark, rebuilt by hand: {base:6.3f} s  (baseline, median of {RUNS})")


if __name__ == "__main__":
    main()
