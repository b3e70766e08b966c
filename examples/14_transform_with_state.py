"""Seeds 002 and 004 on transformWithState, Spark 4's successor to applyInPandasWithState: state
variables by name (a value, a list and a map), event-time timers, and :state to look inside.

- the rack state machine of seed 002: three readings of 100 or more in a row put a rack in "warning",
  a reading under 100 sets it back to "normal" (a value state for the status, a list state of the hot
  readings that expire a day after they were written (a TTL, so processing time), a map state counting
  readings per status)
- the per-user totals of seed 004 with an event-time timeout: a user's total closes one hour of event
  time after their last transaction (a value state and an event-time timer), and :state --timers shows
  the timer still waiting
- the same totals on the row-based transformWithState (Rows in, Rows out, no pandas)

    .venv/bin/python examples/14_transform_with_state.py
"""

from __future__ import annotations

import pandas as pd
from _common import example, show, wait_until, write_json
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

READINGS = [("rack1", 101.0, 1), ("rack1", 102.0, 2), ("rack1", 103.0, 3), ("rack2", 101.0, 1),
            ("rack2", 99.0, 2), ("rack2", 100.0, 3), ("rack3", 100.0, 1), ("rack3", 120.0, 2),
            ("rack3", 101.0, 3), ("rack3", 80.0, 4)]
TRANSACTIONS = [  # two files: the second's 12:00 purchase moves event time past u1's and u2's hour
    [("u1", "2023-08-01 10:00:00", 20.0), ("u2", "2023-08-01 10:01:00", 5.5), ("u1", "2023-08-01 10:02:00", 10.0)],
    [("u3", "2023-08-01 10:03:00", 7.25), ("u2", "2023-08-01 10:30:00", 4.5), ("u3", "2023-08-01 12:00:00", 1.0)],
]


class RackStatus(StatefulProcessor):
    def init(self, handle) -> None:
        self.status = handle.getValueState("status", "status STRING")
        self.hot = handle.getListState("hot", "temperature DOUBLE", 24 * 3600 * 1000)  # a TTL of a day
        self.seen = handle.getMapState("readings_per_status", "status STRING", "readings INT")

    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd

        status = self.status.get()[0] if self.status.exists() else "normal"
        hot = [t for (t,) in self.hot.get()] if self.hot.exists() else []
        for batch in rows:
            for temperature in batch.sort_values("seq")["temperature"]:
                hot = hot + [float(temperature)] if temperature >= 100 else []
                status = "warning" if len(hot) >= 3 else ("normal" if temperature < 100 else status)
                count = self.seen.getValue((status,))
                self.seen.updateValue((status,), ((count[0] if count else 0) + 1,))
        self.status.update((status,))
        self.hot.put([(t,) for t in hot]) if hot else self.hot.clear()
        yield pd.DataFrame({"rack": [key[0]], "status": [status], "hot_in_a_row": [len(hot)]})


class SessionTotal(StatefulProcessor):
    def init(self, handle) -> None:
        self.handle = handle
        self.total = handle.getValueState("total", "total DOUBLE, transactions INT, last BIGINT")

    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd

        total, count, last = self.total.get() if self.total.exists() else (0.0, 0, 0)
        for batch in rows:
            total, count = total + float(batch["amount"].sum()), count + len(batch)
            last = max(last, int(batch["time"].max().timestamp() * 1000))
        for timer in self.handle.listTimers():
            self.handle.deleteTimer(timer)
        self.handle.registerTimer(last + 3600 * 1000)  # an hour of event time after the last transaction
        self.total.update((total, count, last))
        yield pd.DataFrame({"userId": [key[0]], "total": [total], "transactions": [count], "status": ["open"]})

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        import pandas as pd

        total, count, _ = self.total.get()
        self.total.clear()
        yield pd.DataFrame({"userId": [key[0]], "total": [total], "transactions": [count], "status": ["closed"]})


class SessionTotalRows(StatefulProcessor):
    """SessionTotal on Rows: the same state and the same timer."""

    def init(self, handle) -> None:
        self.handle = handle
        self.total = handle.getValueState("total", "total DOUBLE, transactions INT, last BIGINT")

    def handleInputRows(self, key, rows, timerValues):
        from pyspark.sql import Row

        total, count, last = self.total.get() if self.total.exists() else (0.0, 0, 0)
        for row in rows:
            total, count = total + row.amount, count + 1
            last = max(last, int(row.time.timestamp() * 1000))
        for timer in self.handle.listTimers():
            self.handle.deleteTimer(timer)
        self.handle.registerTimer(last + 3600 * 1000)
        self.total.update((total, count, last))
        yield Row(userId=key[0], total=total, transactions=count, status="open")

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        from pyspark.sql import Row

        total, count, _ = self.total.get()
        self.total.clear()
        yield Row(userId=key[0], total=total, transactions=count, status="closed")


with example(__doc__) as (ss, scratch, _):
    write_json(scratch / "racks", "r.json", [{"rack": r, "temperature": t, "seq": s} for r, t, s in READINGS])
    racks = ss.source.files("json", str(scratch / "racks"), schema="rack STRING, temperature DOUBLE, seq INT")
    status = racks.groupBy("rack").transformWithStateInPandas(
        RackStatus(), "rack STRING, status STRING, hot_in_a_row INT", "update", "ProcessingTime")
    query = ss.start(status, "rack_status_v2")
    # processing time: Spark runs batches without data to expire the TTL, so processAllAvailable never returns
    wait_until(lambda: len(ss.peek("rack_status_v2", 100).rows) >= 3, "the racks' status")
    show("rack status", ss.peek("rack_status_v2", order_by="rack"))
    for variable in ("status", "hot", "readings_per_status"):
        state = ss.state("rack_status_v2", variable=variable).drop("partition_id")
        state = state.orderBy(*state.columns).toPandas()
        if "expires_at" in state:  # a day after each was written: when depends on the clock
            day = (state["expires_at"] - pd.Timestamp.now()).dt.total_seconds().between(23 * 3600, 24 * 3600)
            state = state.drop(columns=["ttlExpirationMs", "expires_at"]).assign(expires_in_a_day=day)
        print(f"\nstate variable {variable}\n" + state.to_string(index=False))
    print("state variables: " + ss.state_info("rack_status_v2")[0].operators[0].described_variables())
    query.stop()

    for index, rows in enumerate(TRANSACTIONS):
        write_json(scratch / "tx", f"{index}.json", [{"userId": u, "time": t, "amount": a} for u, t, a in rows])
    transactions = ss.source.files("json", str(scratch / "tx"), schema="userId STRING, time TIMESTAMP, amount DOUBLE",
                                   max_files_per_trigger=1)
    sessions = transactions.withWatermark("time", "10 minutes").groupBy("userId").transformWithStateInPandas(
        SessionTotal(), "userId STRING, total DOUBLE, transactions INT, status STRING", "update", "EventTime")
    query = ss.start(sessions, "user_sessions_v2")
    query.process_all_available()
    wait_until(lambda: len(ss.peek("user_sessions_v2", 100).rows) >= 6, "the closed sessions")
    show("per-user sessions, as each batch updated them",
         ss.peek("user_sessions_v2", 100, order_by=["userId", "transactions", "status desc"]))
    state = ss.state("user_sessions_v2", variable="total").drop("partition_id").toPandas()
    print("\nstate variable total (open sessions only)\n" + state.to_string(index=False))
    timers = ss.state("user_sessions_v2", timers=True).drop("partition_id").toPandas()
    print("\ntimers\n" + timers.to_string(index=False))
    query.stop()

    rows = transactions.withWatermark("time", "10 minutes").groupBy("userId").transformWithState(
        SessionTotalRows(), "userId STRING, total DOUBLE, transactions INT, status STRING", "update", "EventTime")
    query = ss.start(rows, "user_sessions_rows")
    query.process_all_available()
    wait_until(lambda: len(ss.peek("user_sessions_rows", 100).rows) >= 6, "the closed sessions")
    show("the same sessions on Rows", ss.peek("user_sessions_rows", 100,
                                             order_by=["userId", "transactions", "status desc"]))
    query.stop()
