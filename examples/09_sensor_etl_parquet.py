"""Seed 003: a sensor ETL from JSON files into parquet, with its own checkpoint and a 5-second trigger;
then the parquet output read back as a stream and counted per device type.

    .venv/bin/python examples/09_sensor_etl_parquet.py
"""

from __future__ import annotations

from _common import example, show, write_json
from pyspark.sql import functions as F

SCHEMA = "timestamp TIMESTAMP, deviceId BIGINT, deviceType STRING, signalStrength DOUBLE"

with example(__doc__) as (ss, scratch, _):
    for i in range(2):
        write_json(scratch / "sensors", f"streaming-sensor_file-{i}.json", [
            {"timestamp": f"2024-01-01 10:00:{j:02d}", "deviceId": j, "deviceType": f"SensorType{'AD'[j % 2]}",
             "signalStrength": j * 1.5} for j in range(i * 4, i * 4 + 4)])
    out, checkpoint = scratch / "out", scratch / "checkpoint"
    sensors = ss.source.files("json", str(scratch / "sensors"), schema=SCHEMA, max_files_per_trigger=1)
    etl = sensors.withColumn("INPUT_FILE_NAME", F.input_file_name()) \
        .withColumn("PROCESSED_TIME", F.current_timestamp())
    query = ss.start(etl, "sensor_etl", sink="parquet", path=str(out), checkpoint=str(checkpoint),
                     trigger="5 seconds")
    print(f"started {query.name}: {query.sink} sink at {out}, {query.mode} mode, trigger {query.trigger}")
    query.process_all_available()  # one file per trigger: the second batch waits for the next 5 seconds
    query.stop()
    print(f"{len(query.history)} micro-batches; checkpoint holds: {sorted(p.name for p in checkpoint.iterdir() if not p.name.startswith('.'))}")
    show("ss.peek reads the parquet files the query wrote", ss.peek(query, 3, order_by="deviceId"),
         columns=["deviceId", "deviceType", "signalStrength"])

    back = ss.source.files("parquet", str(out), schema=SCHEMA)
    per_type = ss.start(back.groupBy("deviceType").count(), "per_type")
    per_type.process_all_available()
    show("the parquet output, read back as a stream", ss.peek("per_type", order_by="deviceType"))
    per_type.stop()
