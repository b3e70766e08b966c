"""Kafka, with or without Spark's connector on the server.

- `options`, `offsets`: what the options mean and how a batch's offsets are planned (pure logic).
- `source`: sparkscope's own Kafka source and sink, Python data sources run by the server's Python
  workers. The session registers them by value, so the server needs confluent-kafka, not sparkscope.
- `connector`: which of the two a session uses, and registering ours.
- `broker`: the client's own view of a cluster: topics, partitions, latest offsets, and producing.
"""

SOURCE_NAME = "sparkscope_kafka"  # Spark refuses a Python data source named "kafka" (DATA_SOURCE_ALREADY_EXISTS)
