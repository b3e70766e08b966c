"""Pure logic of client/query: no server."""

from __future__ import annotations





FOREACH_BATCH_FAILURE = """(STREAM_FAILED) [PYTHON_EXCEPTION] [session: 8567da67] [userId: ] Found error inside \
foreachBatch Python process: Traceback (most recent call last):
  File "/x/foreach_batch_worker.py", line 72, in process
  File "/x/sparkscope/client/bounded_sink.py", line 52, in __call__
    new = batch_df.limit(self.rows).toArrow()
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/x/pyspark/sql/connect/client/core.py", line 2443, in _handle_rpc_error
    raise convert_exception(
pyspark.errors.exceptions.connect.SparkRuntimeException: [USER_RAISED_EXCEPTION] '(value < 3)' is not true! \
SQLSTATE: P0001

JVM stacktrace:
org.apache.spark.SparkRuntimeException
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.raiseError(QueryExecutionErrors.scala:3082)
"""


def test_a_failure_inside_foreach_batch_is_summarised_by_the_python_exception_it_raised():
    from sparkscope.client.error_reading import summarise_error

    assert summarise_error(FOREACH_BATCH_FAILURE) == "'(value < 3)' is not true!"
    own = FOREACH_BATCH_FAILURE.replace(
        "pyspark.errors.exceptions.connect.SparkRuntimeException: [USER_RAISED_EXCEPTION] '(value < 3)' is not "
        "true! SQLSTATE: P0001", "ValueError: the sensor id is missing")
    assert summarise_error(own) == "ValueError: the sensor id is missing"


def test_a_failure_inside_a_python_data_source_is_summarised_by_its_exception():
    from sparkscope.client.error_reading import summarise_error

    text = ("[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source perform "
            "latestOffset: Traceback (most recent call last):\n  File \"<string>\", line 3, in latestOffset\n"
            "sparkscope.client.kafka.source.KafkaDataLossError: Some data may have been lost: partition t-0 is gone\n"
            "\nJVM stacktrace:\norg.apache.spark.SparkException: boom\n\tat x.y(Z.scala:1)\n")
    assert summarise_error(text) == "KafkaDataLossError: Some data may have been lost: partition t-0 is gone"
