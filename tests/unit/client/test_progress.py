"""Pure logic of client/progress: no server."""

from __future__ import annotations

import json


from sparkscope.client.monitoring.progress import Progress


PROGRESS = {"id": "q1", "runId": "r1", "name": "counts", "timestamp": "2024-01-01T00:00:00.000Z", "batchId": 7,
            "numInputRows": 10, "inputRowsPerSecond": "NaN", "processedRowsPerSecond": 20.5,
            "durationMs": {"triggerExecution": 120, "addBatch": 80},
            "eventTime": {"watermark": "2024-01-01T00:00:00.000Z"},
            "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 4, "numRowsUpdated": 2,
                                "memoryUsedBytes": 100, "numRowsDroppedByWatermark": 3}],
            "sources": [{"description": "RateStream", "numInputRows": 10, "inputRowsPerSecond": 1.0,
                         "processedRowsPerSecond": 2.0}], "sink": {"description": "MemorySink"}}


def test_progress_model():
    p = Progress.from_json(json.dumps(PROGRESS))
    assert (p.batch_id, p.input_rows, p.input_rows_per_second, p.processed_rows_per_second) == (7, 10, 0.0, 20.5)
    assert (p.batch_duration_ms, p.durations_ms["addBatch"], p.state_rows, p.dropped_by_watermark) == (120, 80, 4, 3)
    assert p.sink == "MemorySink" and p.sources[0].description == "RateStream"


def test_the_rows_a_batch_wrote_to_its_sink_are_none_where_spark_did_not_count_them():
    def sink_rows(sink):
        return Progress.from_json(json.dumps({**PROGRESS, "sink": sink})).sink_rows

    assert sink_rows({"description": "MemorySink", "numOutputRows": 4}) == 4
    assert sink_rows({"description": "MemorySink", "numOutputRows": 0}) == 0
    assert sink_rows({"description": "ForeachBatchSink", "numOutputRows": -1}) is None
    assert sink_rows({"description": "MemorySink"}) is None
