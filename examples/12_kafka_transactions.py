"""Seed 004 on Kafka: transactions as JSON in a topic, per-user running totals kept in state (with no
timeout, and with an event-time timeout), and the seed's watermarked 5-minute click windows.

The seed's Scala `mapGroupsWithState` is `applyInPandasWithState` in Python. The script sends its own
sample records to new topics (named after this run), so it can run again on the same cluster:

    .venv/bin/python examples/12_kafka_transactions.py --bootstrap localhost:9092

Spark's Kafka connector is used when the server has it (sparkscope server start --kafka), and
sparkscope's own Kafka source otherwise; the first line printed says which.
"""

from __future__ import annotations

import json
import uuid

from _common import example, show, wait_until
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from sparkscope.client.kafka.broker import Producer, create_topic

# Each batch of the seed is sent as one burst right after a batch ended: a trigger every 3 s (rather than
# polling without pause) keeps a burst in one micro-batch, so the outputs below are the same on every run
TRIGGER = "3 seconds"
TRANSACTION = "userId STRING, transactionId STRING, transactionTime STRING, amount DOUBLE"
# (userId, transactionId, transactionTime, amount), sent in two batches
BATCHES = [
    [("u1", "t1", "2023-08-01 10:00:00", 20.0), ("u2", "t2", "2023-08-01 10:01:00", 5.5),
     ("u1", "t3", "2023-08-01 10:02:00", 10.0)],
    [("u3", "t4", "2023-08-01 10:03:00", 7.25), ("u2", "t5", "2023-08-01 10:30:00", 4.5),
     ("u3", "t6", "2023-08-01 12:00:00", 1.0)],  # u3's late-morning purchase moves event time past u1's hour
]
CLICKS = [  # the seed's clickstream, three batches
    [("user1", "2023-08-01 10:00:00"), ("user2", "2023-08-01 10:00:10"), ("user1", "2023-08-01 10:00:20")],
    [("user1", "2023-08-01 10:05:05"), ("user2", "2023-08-01 10:05:10"), ("user2", "2023-08-01 10:05:20")],
    [("user1", "2023-08-01 10:10:00"), ("user2", "2023-08-01 10:10:10"), ("user1", "2023-08-01 10:01:00")],
    [("user2", "2023-08-01 10:02:00")],  # too late: the watermark (10:05:10) closed its window
]


def options(parser) -> None:
    parser.add_argument("--bootstrap", default="localhost:9092", help="Kafka bootstrap servers")


def running_total(key, batches, state):
    """No timeout: a user's total grows with every transaction, for ever."""
    import pandas as pd

    total, count = state.get if state.exists else (0.0, 0)
    for batch in batches:
        total, count = total + float(batch["amount"].sum()), count + len(batch)
    state.update((total, count))
    yield pd.DataFrame({"userId": [key[0]], "total": [total], "transactions": [count]})


def session_total(key, batches, state):
    """Event-time timeout: a user's total closes one hour (event time) after their last transaction."""
    import pandas as pd

    if state.hasTimedOut:
        total, count, _ = state.get
        state.remove()
        yield pd.DataFrame({"userId": [key[0]], "total": [total], "transactions": [count], "status": ["closed"]})
        return
    total, count, last = state.get if state.exists else (0.0, 0, 0)
    for batch in batches:
        total, count = total + float(batch["amount"].sum()), count + len(batch)
        last = max(last, int(batch["transactionTime"].max().timestamp() * 1000))
    state.update((total, count, last))
    state.setTimeoutTimestamp(last + 3600 * 1000)
    yield pd.DataFrame({"userId": [key[0]], "total": [total], "transactions": [count], "status": ["open"]})


def send(bootstrap: str, topic: str, rows: list[dict]) -> None:
    Producer(bootstrap).send(topic, [(None, json.dumps(row)) for row in rows])


with example(__doc__, options) as (ss, _, args):
    run = uuid.uuid4().hex[:6]
    transactions_topic, clicks_topic = f"transactions-{run}", f"clickstream-{run}"
    for topic in (transactions_topic, clicks_topic):
        create_topic(args.bootstrap, topic, partitions=2)
    print(f"topics {transactions_topic} and {clicks_topic} at {args.bootstrap}")
    print(ss.server.kafka.describe())

    raw = ss.source.kafka(args.bootstrap, subscribe=transactions_topic, starting_offsets="earliest")
    transactions = raw.select(F.from_json(F.col("value").cast("string"), TRANSACTION).alias("t")).select(
        "t.userId", "t.transactionId", F.to_timestamp("t.transactionTime").alias("transactionTime"), "t.amount")
    totals = ss.start(transactions.groupBy("userId").applyInPandasWithState(
        running_total, "userId STRING, total DOUBLE, transactions INT", "total DOUBLE, count INT", "update",
        GroupStateTimeout.NoTimeout), "user_totals", trigger=TRIGGER)
    sessions = ss.start(transactions.withWatermark("transactionTime", "10 minutes").groupBy("userId")
                        .applyInPandasWithState(session_total, "userId STRING, total DOUBLE, transactions INT, "
                                                "status STRING", "total DOUBLE, count INT, last BIGINT", "update",
                                                GroupStateTimeout.EventTimeTimeout), "user_sessions",
                        trigger=TRIGGER)
    for batch in BATCHES:
        send(args.bootstrap, transactions_topic, [dict(zip(("userId", "transactionId", "transactionTime", "amount"),
                                                           row, strict=True)) for row in batch])
        totals.process_all_available()
        sessions.process_all_available()
    # the last batch's watermark (11:50) is past u1's and u2's hour: a batch without data closes them
    wait_until(lambda: len(ss.peek("user_sessions", 100).rows) == 6, "closed sessions")
    show("per-user totals (no timeout), as each batch updated them",
         ss.peek("user_totals", order_by=["userId", "transactions"]))
    show("per-user sessions (event-time timeout), as each batch updated them",
         ss.peek("user_sessions", 100, order_by=["userId", "transactions", "status desc"]))

    clicks = ss.source.kafka(args.bootstrap, subscribe=clicks_topic, starting_offsets="earliest") \
        .select(F.from_json(F.col("value").cast("string"), "user_id STRING, clicktimestamp TIMESTAMP").alias("c")) \
        .select("c.*")
    windows = ss.start(clicks.withWatermark("clicktimestamp", "5 minutes")
                       .groupBy(F.window("clicktimestamp", "5 minutes"), "user_id").count(), "click_windows",
                       mode="update", trigger=TRIGGER)
    for batch in CLICKS:
        send(args.bootstrap, clicks_topic, [{"user_id": user, "clicktimestamp": time} for user, time in batch])
        windows.process_all_available()
    dropped = sum(p.dropped_by_watermark for p in windows.history)
    print(f"\nclick windows: watermark {windows.progress.watermark}, late clicks dropped: {dropped}")
    show("click counts per 5-minute window, as each batch updated them",
         ss.peek("click_windows", 100, order_by=["window", "user_id", "count"]))
    ss.streams.stop_all()
