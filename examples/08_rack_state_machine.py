"""Seed 002/004: a per-rack state machine. Three readings of 100 or more in a row put a rack in
"warning"; a reading under 100 sets it back to "normal".

The seeds use Scala's mapGroupsWithState; from Python the same is applyInPandasWithState, whose
function runs in Python workers on the server.

    .venv/bin/python examples/08_rack_state_machine.py
"""

from __future__ import annotations

from _common import example, show, write_json
from pyspark.sql.streaming.state import GroupStateTimeout

READINGS = [("rack1", 101.0, 1), ("rack1", 102.0, 2), ("rack1", 103.0, 3), ("rack2", 101.0, 1),
            ("rack2", 99.0, 2), ("rack2", 100.0, 3), ("rack3", 100.0, 1), ("rack3", 120.0, 2),
            ("rack3", 101.0, 3), ("rack3", 80.0, 4)]


def update(key, batches, state):
    import pandas as pd

    hot, status = state.get if state.exists else (0, "normal")
    for batch in batches:
        for temperature in batch.sort_values("seq")["temperature"]:
            hot = hot + 1 if temperature >= 100 else 0
            status = "warning" if hot >= 3 else ("normal" if temperature < 100 else status)
    state.update((hot, status))
    yield pd.DataFrame({"rack": [key[0]], "status": [status], "hot_in_a_row": [hot]})


with example(__doc__) as (ss, scratch, _):
    write_json(scratch / "racks", "r.json", [{"rack": r, "temperature": t, "seq": s} for r, t, s in READINGS])
    racks = ss.source.files("json", str(scratch / "racks"), schema="rack STRING, temperature DOUBLE, seq INT")
    status = racks.groupBy("rack").applyInPandasWithState(
        update, "rack STRING, status STRING, hot_in_a_row INT", "hot INT, status STRING", "update",
        GroupStateTimeout.NoTimeout)
    query = ss.start(status, "rack_status")  # update mode, as the state function declares
    query.process_all_available()
    show("rack status", ss.peek("rack_status", order_by="rack"))
    query.stop()
