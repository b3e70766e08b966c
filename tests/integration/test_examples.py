"""Every script in examples/ runs against the real server and prints what the seed's semantics dictate."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.kafka_broker import SEED_004_TOTALS

WINDOW_COUNTS = [r"Close 2016-07-26 02:00-03:00 +10\n", r"Open 2016-07-26 02:00-03:00 +20\n",
                 r"Close 2016-07-26 03:00-04:00 +10\n", r"Open 2016-07-26 03:00-04:00 +20\n"]

EXPECTED = {
    "01_event_counts.py": [r"counts: 4 micro-batches, complete mode, watermark none\n",
                           r"counts_wm: 4 micro-batches, complete mode, watermark 2016-07-26T02:14:00.000Z\n",
                           *WINDOW_COUNTS],
    "02_socket_word_count.py": [r"word +count\n *apache +1\n *spark +3\n *streaming +1\n"],
    "03_file_sources.py": [r"people over 28\nname +age\n ann +31\n cid +45\n",
                           r"the bad line is gone\n id v\n *1 x\n *2 y\n",
                           r"_corrupt_record\nNone None +not json\n"],
    "04_joins.py": [r"\(t9 has no label\)\ntype device +label\n *t1 +a thermo\n *t2 +b +hygro\n\n",
                    r"left outer join\n.*\n.*\n.*\n *t9 +c +None\n",
                    r"impressionTime +clickAdId +clickTime\n *1 2024-01-01 10:00:00\S* +1 2024-01-01 10:05:00\S*\n$"],
    "05_drop_duplicates.py": [r"guid +eventTime\n *g1 2024-01-01 10:00:00\S*\n *g2 2024-01-01 10:01:00\S*\n",
                              r"watermark 2024-01-01T10:00:50.000Z; guids still held in state: 1 "],
    "06_iot_windows.py": [r"07:55-08:05 100.333333\n.*08:00-08:10 100.500000\n.*08:05-08:15 102.666667\n"
                          r".*08:10-08:20 103.500000\n",
                          r"07:55-08:05 rack1 +99.5\n", r"08:10-08:20 rack2 +104.0\n"],
    "07_mobile_late_events.py": [r"after file1: watermark 2018-03-02T10:23:50.000Z\n",
                                 r"10:10-10:20 +open +1\n", r"10:20-10:30 +open +2\n",
                                 r"late rows dropped by the watermark: 1\n"],
    "08_rack_state_machine.py": [r"rack1 warning +3\nrack2 +normal +1\nrack3 +normal +0\n"],
    "09_sensor_etl_parquet.py": [r"parquet sink at \S+, append mode, trigger 5 seconds\n",
                                 r"2 micro-batches; checkpoint holds: \['commits', 'metadata', 'offsets', 'sources'\]",
                                 r"SensorTypeA +4\nSensorTypeD +4\n"],
    "10_foreach_batch.py": [r"alerts: foreach_batch sink, 3 micro-batches\n",
                            r"deviceId +count +batch\n(?: +\d +\d +[012]\n){3}$"],
    "11_seed_mistakes.py": [r"error: A json sink only takes append mode, not complete\. Add withWatermark",
                            r"warning: withWatermark is applied after the aggregation, so it cannot bound",
                            r"TypeError: 'bool' object is not callable. It is a property: logs.isStreaming is True"],
    "14_transform_with_state.py": [r"rack1 warning +3\nrack2 +normal +1\nrack3 +normal +0\n",
                                   r"state variable status\n rack +status\nrack1 warning\nrack2 +normal\nrack3 +normal\n",
                                   r"state variable hot\n rack +temperature +expires_in_a_day\nrack1 +101.0 +True\n"
                                   r"rack1 +102.0 +True\nrack1 +103.0 +True\nrack2 +100.0 +True\n",
                                   r"state variables: .*hot \(list with TTL\)", r"state variables: .*status \(value\)",
                                   r"state variables: .*readings_per_status \(map\)",
                                   r"timers\nuserId +expiration_timestamp_ms +fires_at\n +u3 +1690894800000 "
                                   r"2023-08-01 13:00:00\n",
                                   r"the same sessions on Rows\nuserId +total +transactions status\n +u1 +30.00 +2 +open\n"
                                   r" +u1 +30.00 +2 closed\n +u2 +5.50 +1 +open\n +u2 +10.00 +2 +open\n +u2 +10.00 +2 "
                                   r"closed\n +u3 +8.25 +2 +open\n",
                                   r"rack1 +normal +2\nrack1 warning +1\nrack2 +normal +3\nrack3 +normal +3\n"
                                   r"rack3 warning +1\n",
                                   r"u1 +30.00 +2 +open\n +u1 +30.00 +2 closed\n +u2 +5.50 +1 +open\n +u2 +10.00 +2 "
                                   r"+open\n +u2 +10.00 +2 closed\n +u3 +8.25 +2 +open\n",
                                   r"state variable total \(open sessions only\)\nuserId +total +transactions +last\n"
                                   r" +u3 +8.25 +2 1690891200000\n"],
    "13_triggers_and_sinks.py": [r"processing time: ticks ran [1-9]\d* micro-batches",
                                 r"continuous: live wrote [1-9]\d* rows without micro-batches \(history 0\)",
                                 r"once: 1 batch, 30 rows; available-now: 3 batches, 30 rows\n",
                                 r"rows +amount\n *30 +337.5\n",
                                 *[rf"{fmt} sink: 30 rows under " for fmt in ("parquet", "json", "csv", "orc")]],
}


def run_example(name: str, remote_url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "examples" / name), "--remote", remote_url],
                          capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)


def test_every_example_is_tested():
    scripts = {p.name for p in (ROOT / "examples").glob("[0-9]*.py")}
    assert scripts == set(EXPECTED) | {"12_kafka_transactions.py"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_prints_the_seed_results(name, remote_url):
    done = run_example(name, remote_url)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    for pattern in EXPECTED[name]:
        assert re.search(pattern, done.stdout, re.MULTILINE), f"{pattern!r} not in:\n{done.stdout}"


def test_the_kafka_example_runs_seed_004_against_a_real_broker(remote_url, kafka_broker):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "12_kafka_transactions.py"), "--remote", remote_url,
                           "--bootstrap", kafka_broker.bootstrap], capture_output=True, text=True, timeout=240, env=env,
                          cwd=ROOT)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert "Kafka through sparkscope's own source and sink" in done.stdout
    assert SEED_004_TOTALS in done.stdout
    assert ("userId  total  transactions status\n"
            "    u1  30.00             2   open\n"
            "    u1  30.00             2 closed\n"
            "    u2   5.50             1   open\n"
            "    u2  10.00             2   open\n"
            "    u2  10.00             2 closed\n"
            "    u3   8.25             2   open\n") in done.stdout
    assert "click windows: watermark 2023-08-01T10:05:10.000Z, late clicks dropped: 1\n" in done.stdout
    assert re.search(r"10:00-10:05 +user1 +3\n.*10:00-10:05 +user2 +1\n.*10:05-10:10 +user2 +2\n", done.stdout,
                     re.DOTALL), done.stdout
