"""Seed 002: mobile events counted per 10-minute window in update mode, with a 10-minute watermark.

The second file carries a late event (10:11:35) that arrives after the watermark moved to
10:23:50: Spark drops it, and the progress says so (numRowsDroppedByWatermark).

    .venv/bin/python examples/07_mobile_late_events.py
"""

from __future__ import annotations

from _common import example, show, write_json
from pyspark.sql import functions as F

with example(__doc__) as (ss, scratch, _):
    mobile_dir = scratch / "mobile"
    write_json(mobile_dir, "file1.json", [{"id": "p1", "action": "open", "ts": "2018-03-02T10:15:20"},
                                          {"id": "p2", "action": "open", "ts": "2018-03-02T10:22:40"},
                                          {"id": "p3", "action": "open", "ts": "2018-03-02T10:33:50"}])
    mobile = ss.source.files("json", str(mobile_dir), schema="`id` String, `action` String, `ts` Timestamp",
                             max_files_per_trigger=1)
    counts = mobile.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes"), "action").count()
    query = ss.start(counts, "mobile", mode="update")
    query.process_all_available()
    print(f"after file1: watermark {query.progress.watermark}")

    write_json(mobile_dir, "file2.json", [{"id": "p4", "action": "open", "ts": "2018-03-02T10:29:35"},
                                          {"id": "p5", "action": "open", "ts": "2018-03-02T10:11:35"}])
    query.process_all_available()
    show("rows the memory sink received (one per update)", ss.peek("mobile", 50))
    dropped = sum(p.dropped_by_watermark for p in query.history)
    print(f"\nlate rows dropped by the watermark: {dropped}")
    query.stop()
