"""Seed 001: a stream-static join, and a stream-stream join of ad impressions and clicks with watermarks.

    .venv/bin/python examples/04_joins.py
"""

from __future__ import annotations

from _common import example, show, write_json
from pyspark.sql import functions as F

with example(__doc__) as (ss, scratch, _):
    write_json(scratch / "devices", "d.json", [{"device": "a", "type": "t1"}, {"device": "b", "type": "t2"},
                                               {"device": "c", "type": "t9"}])
    device_types = ss.spark.createDataFrame([("t1", "thermo"), ("t2", "hygro")], "type STRING, label STRING")
    devices = ss.source.files("json", str(scratch / "devices"), schema="device STRING, type STRING")
    ss.start(devices.join(device_types, "type"), "inner_join").process_all_available()
    ss.start(devices.join(device_types, "type", "left_outer"), "outer_join").process_all_available()
    show("stream-static inner join (t9 has no label)", ss.peek("inner_join", order_by="device"))
    show("stream-static left outer join", ss.peek("outer_join", order_by="device"))

    write_json(scratch / "impressions", "i.json", [{"adId": 1, "impressionTime": "2024-01-01 10:00:00"},
                                                   {"adId": 2, "impressionTime": "2024-01-01 10:00:00"}])
    write_json(scratch / "clicks", "c.json", [{"clickAdId": 1, "clickTime": "2024-01-01 10:05:00"},
                                              {"clickAdId": 2, "clickTime": "2024-01-01 12:00:00"}])
    impressions = ss.source.files("json", str(scratch / "impressions"),
                                  schema="adId INT, impressionTime TIMESTAMP").withWatermark("impressionTime", "2 hours")
    clicks = ss.source.files("json", str(scratch / "clicks"),
                             schema="clickAdId INT, clickTime TIMESTAMP").withWatermark("clickTime", "3 hours")
    joined = impressions.join(clicks, F.expr(
        "clickAdId = adId AND clickTime >= impressionTime AND clickTime <= impressionTime + interval 1 hour"))
    ad_clicks = ss.start(joined, "ad_clicks")  # append mode is inferred for a stream-stream join
    ad_clicks.process_all_available()
    show("stream-stream join: ad 2 was clicked two hours later, outside the 1-hour bound",
         ss.peek("ad_clicks"))
    ss.streams.stop_all()
