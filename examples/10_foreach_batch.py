"""Seeds 003/004: foreachBatch. Each micro-batch arrives as an ordinary DataFrame with its batch id;
here every batch is tagged and appended to a parquet table, which a batch query then reads.

The function runs in a Python worker on the server, with the same interpreter as this script
when the server is the embedded one.

    .venv/bin/python examples/10_foreach_batch.py
"""

from __future__ import annotations

from _common import example, write_json
from pyspark.sql import functions as F

with example(__doc__) as (ss, scratch, _):
    for i in range(3):
        write_json(scratch / "signals", f"{i}.json", [{"deviceId": i, "count": i + 1}])
    out = str(scratch / "batches")
    signals = ss.source.files("json", str(scratch / "signals"), schema="deviceId INT, count INT",
                              max_files_per_trigger=1)

    def save(batch_df, batch_id):
        batch_df.withColumn("batch", F.lit(batch_id)).write.mode("append").parquet(out)

    query = ss.start(signals, "alerts", foreach_batch=save)
    query.process_all_available()
    query.stop()
    print(f"{query.name}: {query.sink} sink, {len(query.history)} micro-batches")
    print("\nwhat the batches wrote (spark.read.parquet)")
    print(ss.spark.read.parquet(out).orderBy("batch").toPandas().to_string(index=False))
