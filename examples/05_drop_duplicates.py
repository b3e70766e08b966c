"""Seed 001: drop duplicate events by guid, with a watermark so Spark can forget old guids.

    .venv/bin/python examples/05_drop_duplicates.py
"""

from __future__ import annotations

from _common import example, show, write_json

with example(__doc__) as (ss, scratch, _):
    write_json(scratch / "events", "a.json", [{"guid": "g1", "eventTime": "2024-01-01 10:00:00"},
                                              {"guid": "g1", "eventTime": "2024-01-01 10:00:00"},
                                              {"guid": "g2", "eventTime": "2024-01-01 10:01:00"}])
    events = ss.source.files("json", str(scratch / "events"), schema="guid STRING, eventTime TIMESTAMP")
    unique = events.withWatermark("eventTime", "10 seconds").dropDuplicates(["guid", "eventTime"])
    query = ss.start(unique, "unique_events")
    query.process_all_available()
    show("3 events in, the repeated g1 dropped", ss.peek("unique_events", order_by="guid"))
    print(f"\nwatermark {query.progress.watermark}; guids still held in state: {query.progress.state_rows} "
          "(older ones were evicted once the watermark passed them)")
    query.stop()
