"""The seed notebooks' pipelines, run through the SDK, with the results Spark's semantics dictate."""

from __future__ import annotations

import json
import socket
import threading
from collections import Counter, defaultdict
from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F

from sparkscope.client.errors import UnsupportedOperation

EVENTS = [("2016-07-26 02:%02d:00" % (i % 60), "Open" if i % 3 else "Close") for i in range(30)] + \
         [("2016-07-26 03:%02d:00" % (i % 60), "Open" if i % 2 else "Close") for i in range(20)]


def write_json(path, name, rows):
    path.joinpath(name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def hour_counts():
    return Counter((t[:13], a) for t, a in EVENTS)


def _event_files(data_dir):
    for index in range(0, len(EVENTS), 10):
        write_json(data_dir, f"file-{index:02d}.json", [{"time": t, "action": a} for t, a in EVENTS[index:index + 10]])


@pytest.mark.parametrize("watermark", [False, True], ids=["no-watermark", "watermark"])
def test_seed000_windowed_event_counts(ss, data_dir, watermark):
    _event_files(data_dir)
    events = ss.source.files("json", str(data_dir), schema="time TIMESTAMP, action STRING", max_files_per_trigger=1)
    if watermark:
        events = events.withWatermark("time", "1 hour")
    counts = events.groupBy(events.action, F.window(events.time, "1 hour")).count()
    query = ss.start(counts, "counts_wm" if watermark else "counts")
    assert query.mode == "complete"
    query.process_all_available()
    rows = ss.peek(query, 100).rows
    got = Counter({(w["start"].strftime("%Y-%m-%d %H"), action): n for action, w, n in rows})
    assert got == hour_counts()
    assert len(query.history) >= 5  # one file per trigger
    if watermark:
        assert query.progress.watermark is not None
    query.stop()


def test_seed001_socket_word_count(ss):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]

    def feed():
        conn, _ = server.accept()
        conn.sendall(b"apache spark\nspark streaming spark\n")
        threading.Event().wait(30)
        conn.close()

    threading.Thread(target=feed, daemon=True).start()
    lines = ss.source.socket("127.0.0.1", port)
    words = lines.select(F.explode(F.split(lines.value, " ")).alias("word"))
    query = ss.start(words.groupBy("word").count(), "word_counts")
    for _ in range(40):
        query.process_all_available()
        rows = dict(ss.peek("word_counts").rows)
        if sum(rows.values()) == 5:
            break
        threading.Event().wait(0.25)
    assert rows == {"apache": 1, "spark": 3, "streaming": 1}
    query.stop()
    server.close()


def test_seed001_csv_source_with_separator_and_schema(ss, data_dir):
    data_dir.joinpath("people.csv").write_text("name;age\nann;31\nbob;27\n")
    people = ss.source.files("csv", str(data_dir), schema="name STRING, age INT", sep=";", header=True)
    query = ss.start(people.where("age > 28"), "adults")
    query.process_all_available()
    assert ss.peek("adults").rows == [("ann", 31)]
    query.stop()


def test_seed001_json_dropmalformed_and_permissive_corrupt_record(ss, data_dir):
    data_dir.joinpath("a.json").write_text('{"id": 1, "v": "x"}\nnot json\n{"id": 2, "v": "y"}\n')
    clean = ss.source.files("json", str(data_dir), schema="id INT, v STRING", mode="DROPMALFORMED")
    q1 = ss.start(clean, "clean")
    q1.process_all_available()
    assert sorted(ss.peek("clean").rows) == [(1, "x"), (2, "y")]
    q1.stop()
    raw = ss.source.files("json", str(data_dir), schema="id INT, v STRING, _corrupt_record STRING",
                          mode="PERMISSIVE")
    q2 = ss.start(raw, "raw")
    q2.process_all_available()
    rows = ss.peek("raw", where="_corrupt_record IS NOT NULL").rows
    assert rows == [(None, None, "not json")]
    q2.stop()


def test_seed001_stream_static_join(ss, data_dir):
    write_json(data_dir, "d.json", [{"device": "a", "type": "t1"}, {"device": "b", "type": "t2"},
                                    {"device": "c", "type": "t9"}])
    static = ss.spark.createDataFrame([("t1", "thermo"), ("t2", "hygro")], "type STRING, label STRING")
    devices = ss.source.files("json", str(data_dir), schema="device STRING, type STRING")
    inner = ss.start(devices.join(static, "type"), "inner_join")
    outer = ss.start(devices.join(static, "type", "left_outer"), "outer_join")
    inner.process_all_available()
    outer.process_all_available()
    assert sorted(ss.peek("inner_join").rows) == [("t1", "a", "thermo"), ("t2", "b", "hygro")]
    assert sorted(ss.peek("outer_join").rows, key=str) == sorted(
        [("t1", "a", "thermo"), ("t2", "b", "hygro"), ("t9", "c", None)], key=str)
    ss.streams.stop_all()


def test_seed001_stream_stream_join_with_watermarks(ss, tmp_path):
    imp_dir, clk_dir = tmp_path / "imp", tmp_path / "clk"
    imp_dir.mkdir()
    clk_dir.mkdir()
    write_json(imp_dir, "i.json", [{"adId": 1, "impressionTime": "2024-01-01 10:00:00"},
                                   {"adId": 2, "impressionTime": "2024-01-01 10:00:00"}])
    write_json(clk_dir, "c.json", [{"clickAdId": 1, "clickTime": "2024-01-01 10:05:00"},
                                   {"clickAdId": 2, "clickTime": "2024-01-01 12:00:00"}])
    impressions = ss.source.files("json", str(imp_dir), schema="adId INT, impressionTime TIMESTAMP") \
        .withWatermark("impressionTime", "2 hours")
    clicks = ss.source.files("json", str(clk_dir), schema="clickAdId INT, clickTime TIMESTAMP") \
        .withWatermark("clickTime", "3 hours")
    joined = impressions.join(clicks, F.expr(
        "clickAdId = adId AND clickTime >= impressionTime AND clickTime <= impressionTime + interval 1 hour"))
    query = ss.start(joined, "ad_clicks")
    assert query.mode == "append"
    query.process_all_available()
    assert [r[0] for r in ss.peek("ad_clicks").rows] == [1]  # ad 2 was clicked after the 1-hour bound
    query.stop()


def test_seed001_drop_duplicates_with_watermark(ss, data_dir):
    write_json(data_dir, "a.json", [{"guid": "g1", "eventTime": "2024-01-01 10:00:00"},
                                    {"guid": "g1", "eventTime": "2024-01-01 10:00:00"},
                                    {"guid": "g2", "eventTime": "2024-01-01 10:01:00"}])
    events = ss.source.files("json", str(data_dir), schema="guid STRING, eventTime TIMESTAMP")
    unique = events.withWatermark("eventTime", "10 seconds").dropDuplicates(["guid", "eventTime"])
    query = ss.start(unique, "unique_events")
    assert query.mode == "append"
    query.process_all_available()
    assert sorted(r[0] for r in ss.peek("unique_events").rows) == ["g1", "g2"]
    query.stop()


RACKS = [("rack1", 99.0, "2017-06-02 08:00:00"), ("rack1", 100.0, "2017-06-02 08:03:00"),
         ("rack2", 102.0, "2017-06-02 08:04:00"), ("rack1", 101.0, "2017-06-02 08:07:00"),
         ("rack2", 104.0, "2017-06-02 08:11:00"), ("rack1", 103.0, "2017-06-02 08:14:00")]


def sliding_avgs(by_rack: bool):
    sums = defaultdict(list)
    for rack, temp, ts in RACKS:
        t = datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
        start = t.replace(minute=t.minute - t.minute % 5, second=0)
        for s in (start - timedelta(minutes=5), start):
            key = (s.strftime("%H:%M"), rack) if by_rack else s.strftime("%H:%M")
            sums[key].append(temp)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def test_seed002_sliding_windows_into_iot_and_iot_rack(ss, data_dir):
    write_json(data_dir, "t.json", [{"rack": r, "temperature": t, "ts": ts} for r, t, ts in RACKS])
    racks = ss.source.files("json", str(data_dir), schema="`rack` String, `temperature` Float, `ts` Timestamp")
    iot = ss.start(racks.groupBy(F.window(F.col("ts"), "10 minutes", "5 minutes"))
                   .agg(F.avg("temperature").alias("avg_temp")), "iot")
    iot_rack = ss.start(racks.groupBy(F.window("ts", "10 minutes", "5 minutes"), "rack")
                        .agg(F.avg("temperature").alias("avg_temp")), "iot_rack")
    iot.process_all_available()
    iot_rack.process_all_available()
    got = {w["start"].strftime("%H:%M"): a for w, a in ss.peek("iot", 50, order_by="window.start").rows}
    assert got == pytest.approx(sliding_avgs(False))
    got_rack = {(w["start"].strftime("%H:%M"), r): a for w, r, a in ss.peek("iot_rack", 50).rows}
    assert got_rack == pytest.approx(sliding_avgs(True))
    ss.streams.stop_all()


def test_seed002_mobile_watermark_update_mode_drops_the_late_event(ss, data_dir, tmp_path):
    schema = "`id` String, `action` String, `ts` Timestamp"
    mobile = ss.source.files("json", str(data_dir), schema=schema, max_files_per_trigger=1)
    counts = mobile.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes"), "action").count()
    write_json(data_dir, "file1.json", [{"id": "p1", "action": "open", "ts": "2018-03-02T10:15:20"},
                                        {"id": "p2", "action": "open", "ts": "2018-03-02T10:22:40"},
                                        {"id": "p3", "action": "open", "ts": "2018-03-02T10:33:50"}])
    query = ss.start(counts, "mobile", mode="update")
    query.process_all_available()
    write_json(data_dir, "file2.json", [{"id": "p4", "action": "open", "ts": "2018-03-02T10:29:35"},
                                        {"id": "p5", "action": "open", "ts": "2018-03-02T10:11:35"}])
    query.process_all_available()
    rows = ss.peek("mobile", 50).rows
    updates = Counter(w["start"].strftime("%H:%M") for w, _, _ in rows)
    # 10:10 was reported once (batch 0) and never again: its late event (10:11:35) fell behind the
    # watermark 10:23:50 and was dropped; 10:20 was updated by 10:29:35.
    assert updates["10:10"] == 1
    assert updates["10:20"] == 2
    assert max(n for w, _, n in rows if w["start"].strftime("%H:%M") == "10:20") == 2
    assert sum(p.dropped_by_watermark for p in query.history) == 1
    query.stop()


def test_seed003_sensor_etl_to_parquet_with_checkpoint_and_trigger_then_read_back(ss, data_dir, tmp_path):
    for i in range(3):
        write_json(data_dir, f"streaming-sensor_file-{i}.json",
                   [{"timestamp": f"2024-01-01 10:00:{j:02d}", "deviceId": j, "deviceType": f"SensorType{'AD'[j % 2]}",
                     "signalStrength": j * 1.5} for j in range(i * 4, i * 4 + 4)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    sensors = ss.source.files("json", str(data_dir), max_files_per_trigger=1,
                              schema="timestamp TIMESTAMP, deviceId BIGINT, deviceType STRING, signalStrength DOUBLE")
    etl = sensors.withColumn("INPUT_FILE_NAME", F.input_file_name()) \
        .withColumn("PROCESSED_TIME", F.current_timestamp()).withWatermark("PROCESSED_TIME", "1 minute")
    query = ss.start(etl, "sensor_etl", sink="parquet", path=str(out), checkpoint=str(checkpoint),
                     trigger="5 seconds")
    assert (query.mode, str(query.trigger)) == ("append", "5 seconds")
    query.process_all_available()
    query.stop()
    assert (checkpoint / "offsets").is_dir()
    assert len(ss.peek(query, 100)) == 12
    back = ss.source.files("parquet", str(out), schema=ss.spark.read.parquet(str(out)).schema)
    per_type = ss.start(back.groupBy("deviceType").count(), "per_type")
    per_type.process_all_available()
    assert sorted(ss.peek("per_type").rows) == [("SensorTypeA", 6), ("SensorTypeD", 6)]
    per_type.stop()


@pytest.mark.parametrize("declared", ["update", "append"])
def test_seed002_rack_state_machine_with_apply_in_pandas_with_state(ss, data_dir, declared):
    """The query runs in the output mode the function declares (Spark refuses any other)."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    readings = [("rack1", 101.0, 1), ("rack1", 102.0, 2), ("rack1", 103.0, 3), ("rack2", 101.0, 1),
                ("rack2", 99.0, 2), ("rack2", 100.0, 3), ("rack3", 100.0, 1), ("rack3", 120.0, 2),
                ("rack3", 101.0, 3), ("rack3", 80.0, 4)]
    write_json(data_dir, "r.json", [{"rack": r, "temperature": t, "seq": s} for r, t, s in readings])
    racks = ss.source.files("json", str(data_dir), schema="rack STRING, temperature DOUBLE, seq INT")

    def update(key, pdfs, state):
        import pandas as pd

        hot = state.get[0] if state.exists else 0
        status = state.get[1] if state.exists else "normal"
        for pdf in pdfs:
            for temp in pdf.sort_values("seq")["temperature"]:
                hot = hot + 1 if temp >= 100 else 0
                status = "warning" if hot >= 3 else ("normal" if temp < 100 else status)
        state.update((hot, status))
        yield pd.DataFrame({"rack": [key[0]], "status": [status]})

    status = racks.groupBy("rack").applyInPandasWithState(
        update, "rack STRING, status STRING", "hot INT, status STRING", declared, GroupStateTimeout.NoTimeout)
    query = ss.start(status, "rack_status")
    assert query.mode == declared
    query.process_all_available()
    assert dict(ss.peek("rack_status").rows) == {"rack1": "warning", "rack2": "normal", "rack3": "normal"}
    query.stop()


def test_seed003_foreach_batch_writes_each_micro_batch(ss, data_dir, tmp_path):
    out = str(tmp_path / "batches")
    for i in range(3):
        write_json(data_dir, f"{i}.json", [{"deviceId": i, "count": i + 1}])
    signals = ss.source.files("json", str(data_dir), schema="deviceId INT, count INT", max_files_per_trigger=1)

    def save(batch_df, batch_id):
        batch_df.withColumn("batch", F.lit(batch_id)).write.mode("append").parquet(out)

    query = ss.start(signals, "alerts", foreach_batch=save)
    assert query.sink == "foreach_batch"
    query.process_all_available()
    rows = sorted(ss.spark.read.parquet(out).collect())
    # one file per trigger: three micro-batches of one row each (files of equal age come in any order)
    assert sorted(r.batch for r in rows) == [0, 1, 2]
    assert sorted(r.deviceId for r in rows) == [0, 1, 2]
    query.stop()


def test_seed004_complete_mode_into_a_file_sink_is_refused_clearly(ss, data_dir, tmp_path):
    logs = ss.source.files("json", str(data_dir), schema="userId STRING, ts TIMESTAMP")
    with pytest.raises(UnsupportedOperation) as err:
        ss.start(logs.groupBy("userId").count(), "user_counts", sink="json", path=str(tmp_path / "o"),
                 mode="complete")
    assert str(err.value) == ("A json sink only takes append mode, not complete. Add withWatermark before the "
                              "aggregation and use append, or write to a memory sink in complete mode.")


def test_seed004_watermark_after_the_aggregation_is_explained(ss, data_dir):
    events = ss.source.files("json", str(data_dir), schema="userId STRING, ts TIMESTAMP")
    late = events.groupBy(F.window("ts", "10 minutes"), "userId").count().withWatermark("window", "5 minutes")
    query = ss.start(late, "late_wm")
    assert query.warning.startswith("withWatermark is applied after the aggregation, so it cannot bound")
    query.stop()
