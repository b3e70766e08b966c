"""Seeds 001/004: three mistakes the notebooks make, and what sparkscope says about each.

1. complete mode into a file sink (seed 004): refused before anything starts, with the way out;
2. withWatermark applied after the aggregation (seed 004): the query runs, with a warning that
   the watermark cannot bound the state;
3. isStreaming() called as a method (seed 001): it is a property.

    .venv/bin/python examples/11_seed_mistakes.py
"""

from __future__ import annotations

import sparkscope
from _common import example
from pyspark.sql import functions as F

with example(__doc__) as (ss, scratch, _):
    (scratch / "logs").mkdir()
    logs = ss.source.files("json", str(scratch / "logs"), schema="userId STRING, ts TIMESTAMP")

    print("1. complete mode into a json sink")
    try:
        ss.start(logs.groupBy("userId").count(), "user_counts", sink="json", path=str(scratch / "out"),
                 mode="complete")
    except sparkscope.UnsupportedOperation as exc:
        print(f"   error: {exc}")

    print("2. withWatermark after the aggregation")
    late = logs.groupBy(F.window("ts", "10 minutes"), "userId").count().withWatermark("window", "5 minutes")
    query = ss.start(late, "late_watermark")
    print(f"   warning: {query.warning}")
    query.stop()

    print("3. isStreaming() as a method")
    try:
        logs.isStreaming()
    except TypeError as exc:
        print(f"   TypeError: {exc}. It is a property: logs.isStreaming is {logs.isStreaming}")
