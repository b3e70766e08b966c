"""Seed 002: average rack temperature over sliding 10-minute windows every 5 minutes,
into the memory sinks `iot` (all racks) and `iot_rack` (per rack).

    .venv/bin/python examples/06_iot_windows.py
"""

from __future__ import annotations

from _common import example, show, write_json
from pyspark.sql import functions as F

READINGS = [("rack1", 99.0, "2017-06-02 08:00:00"), ("rack1", 100.0, "2017-06-02 08:03:00"),
            ("rack2", 102.0, "2017-06-02 08:04:00"), ("rack1", 101.0, "2017-06-02 08:07:00"),
            ("rack2", 104.0, "2017-06-02 08:11:00"), ("rack1", 103.0, "2017-06-02 08:14:00")]

with example(__doc__) as (ss, scratch, _):
    write_json(scratch / "iot", "readings.json", [{"rack": r, "temperature": t, "ts": ts} for r, t, ts in READINGS])
    racks = ss.source.files("json", str(scratch / "iot"), schema="`rack` String, `temperature` Float, `ts` Timestamp")
    window = F.window(F.col("ts"), "10 minutes", "5 minutes")
    iot = ss.start(racks.groupBy(window).agg(F.avg("temperature").alias("avg_temp")), "iot")
    iot_rack = ss.start(racks.groupBy(window, "rack").agg(F.avg("temperature").alias("avg_temp")), "iot_rack")
    iot.process_all_available()
    iot_rack.process_all_available()
    show("iot: every reading falls into two overlapping windows", ss.peek("iot", order_by="window.start"))
    show("iot_rack", ss.peek("iot_rack", 50, order_by=["window.start", "rack"]))
    ss.streams.stop_all()
