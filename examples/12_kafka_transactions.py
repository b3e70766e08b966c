"""Seed 004: per-user transaction totals from a Kafka topic of JSON messages.

This needs a Kafka broker and the spark-sql-kafka connector on the *server*, e.g.

    sparkscope server start --conf spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0

(use the connector version that matches the server's Spark). Without the connector the script
stops with sparkscope's one-line explanation and exit code 2.

    .venv/bin/python examples/12_kafka_transactions.py --bootstrap localhost:9092 --topic transactions
"""

from __future__ import annotations

import time

from _common import example, show
from pyspark.sql import functions as F


def options(parser) -> None:
    parser.add_argument("--bootstrap", default="localhost:9092", help="Kafka bootstrap servers")
    parser.add_argument("--topic", default="transactions")
    parser.add_argument("--seconds", type=float, default=30, help="how long to read (default 30)")


with example(__doc__, options) as (ss, _, args):
    messages = ss.source.kafka(args.bootstrap, subscribe=args.topic, starting_offsets="earliest")
    transactions = messages.select(F.from_json(F.col("value").cast("string"),
                                               "userId STRING, transactionId STRING, amount DOUBLE").alias("t")) \
        .select("t.*")
    totals = transactions.groupBy("userId").agg(F.count("*").alias("transactions"), F.sum("amount").alias("total"))
    query = ss.start(totals, "user_totals")
    time.sleep(args.seconds)
    show("per-user totals", ss.peek("user_totals", order_by="userId"))
    query.stop()
