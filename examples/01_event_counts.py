"""Seed 000: count Open/Close events per action and 1-hour window, from JSON files read one per trigger.

The stream runs twice: without a watermark (Spark keeps every window's state forever) and with
a 1-hour watermark (old windows can be dropped). Both give the same counts for in-order data.

    .venv/bin/python examples/01_event_counts.py [--remote sc://host:15002]
"""

from __future__ import annotations

from _common import example, show, write_json
from pyspark.sql import functions as F

with example(__doc__) as (ss, scratch, _):
    events_dir = scratch / "events"
    for hour in (2, 3):
        for part in range(2):  # 2 files per hour, 15 events each
            write_json(events_dir, f"events-{hour:02d}-{part}.json", [
                {"time": f"2016-07-26 {hour:02d}:{part * 15 + i:02d}:00", "action": "Open" if i % 3 else "Close"}
                for i in range(15)])

    events = ss.source.files("json", str(events_dir), schema="time TIMESTAMP, action STRING",
                             max_files_per_trigger=1)
    for name, stream in (("counts", events), ("counts_wm", events.withWatermark("time", "1 hour"))):
        counts = stream.groupBy(stream.action, F.window(stream.time, "1 hour")).count()
        query = ss.start(counts, name)  # memory sink; complete mode is inferred for an aggregation
        query.process_all_available()
        print(f"\n{name}: {len(query.history)} micro-batches, {query.mode} mode, "
              f"watermark {query.progress.watermark or 'none'}")
        show(f"ss.peek('{name}')", ss.peek(name, order_by=["window", "action"]))
        query.stop()
