"""Pure logic of client/errors: no server."""

from __future__ import annotations

import pytest



from sparkscope.client.error_reading import translate


def test_translate_keeps_one_line_and_the_error_class():
    class AnalysisException(Exception):
        def getCondition(self):
            return "TABLE_OR_VIEW_NOT_FOUND"

    err = translate(AnalysisException("[TABLE_OR_VIEW_NOT_FOUND] The table `t` cannot be found. SQLSTATE: 42P01\nJVM"))
    assert str(err) == ("The table `t` cannot be found. Check the name with spark.sql('SHOW TABLES'), or start the "
                        "query that creates it.")
    assert err.error_class == "TABLE_OR_VIEW_NOT_FOUND" and err.code == "table_not_found"
    from sparkscope.core.rendering.render import error_line

    assert error_line(err) == ("error: The table `t` cannot be found. Check the name with :sql SHOW TABLES, or start "
                               "the query that creates it.")


def test_translate_leaves_out_the_java_class_pyspark_puts_first():
    """spark.read.format('nope').load(): the server's SparkClassNotFoundException has no pyspark class, so
    pyspark's message starts with the Java class's name in brackets; the one line starts with what went wrong."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    exc = SparkConnectGrpcException(
        "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: nope. Make sure the provider name is correct. "
        "SQLSTATE: 42K02", errorClass="DATA_SOURCE_NOT_FOUND", reason="org.apache.spark.SparkClassNotFoundException")
    assert str(exc).startswith("(org.apache.spark.SparkClassNotFoundException) [DATA_SOURCE_NOT_FOUND]")
    err = translate(exc)
    assert err.message == "Failed to find the data source: nope. Make sure the provider name is correct"
    assert err.error_class == "DATA_SOURCE_NOT_FOUND"


def test_a_sql_syntax_error_loses_spark_position_noise():
    class ParseException(Exception):
        def getCondition(self):
            return "PARSE_SYNTAX_ERROR"

    err = translate(ParseException("[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'. SQLSTATE: 42601 (line 1, pos 0)"))
    assert str(err) == "Syntax error at or near 'SELEC'. Check the SQL or DDL syntax."


def test_a_query_name_in_use_says_which_and_what_to_do():
    from sparkscope.client.error_reading import translate
    from sparkscope.core.rendering.render import error_line

    class IllegalArgumentException(Exception):
        pass

    error = translate(IllegalArgumentException(
        "Cannot start query with name counts as a query with that name is already active in this SparkSession"))
    assert error.code == "query_exists" and error.data == {"name": "counts"}
    assert error.hint == "Stop it first (ss.streams.stop('counts')) or pick another queryName"
    assert error_line(error) == ("error: Cannot start query with name counts as a query with that name is already "
                                 "active in this SparkSession. Stop it first (:stop counts) or pick another name.")


# the text of a query that read another query's checkpoint (the guide's toTable example: two queries, one folder),
# cut from Spark 4.3's StreamingQueryException
_FOREIGN = ("[STREAM_FAILED] Query [id = 75426047-2ac2-4193-b8d8-02e3e6d87b11, runId = e9ff3295] terminated with "
            "exception: No usable value for path\nDid not find value which can be converted into java.lang.String "
            "SQLSTATE: XXKST\n=== Streaming Query ===\nJVM stacktrace:\norg.apache.spark.sql.streaming."
            "StreamingQueryException: No usable value for path\nCaused by: org.json4s.MappingException: No usable "
            "value for path\n\tat org.json4s.reflect.package$.fail(package.scala:56)\n\tat org.apache.spark.sql."
            "execution.streaming.runtime.CompactibleFileStreamLog.deserializeEntry(CompactibleFileStreamLog.scala:147)")


def test_a_query_that_read_another_query_s_checkpoint_is_named_as_such():
    from pyspark.errors import StreamingQueryException  # known by its class, as pyspark raises it

    from sparkscope.client.error_reading import foreign_checkpoint, summarise_error

    assert foreign_checkpoint(_FOREIGN) == ("its checkpoint holds metadata it cannot read, written by another query "
                                            "with the same checkpointLocation")
    assert summarise_error(_FOREIGN).endswith("; give each query a checkpointLocation of its own")
    failed = translate(StreamingQueryException(message=_FOREIGN))
    assert failed.message == ("Query [id = 75426047-2ac2-4193-b8d8-02e3e6d87b11, runId = e9ff3295] terminated with "
                              "exception: No usable value for path: its checkpoint holds metadata it cannot read, "
                              "written by another query with the same checkpointLocation")
    assert foreign_checkpoint("org.json4s.MappingException: No usable value for path") is None  # no metadata log


def test_a_status_is_read_from_what_caused_an_error_never_from_one_handled_before_it():
    from types import SimpleNamespace

    from sparkscope.client.errors import ServerUnreachable

    import grpc

    class RpcError(grpc.RpcError):  # as grpc raises one: a code() of status UNAVAILABLE
        def code(self):
            return SimpleNamespace(name="UNAVAILABLE")

    class SparkConnectGrpcException(Exception):  # pyspark's: no status of its own
        pass

    caused = SparkConnectGrpcException("the call failed")
    caused.__cause__ = RpcError("failed to connect to all addresses")
    assert isinstance(translate(caused), ServerUnreachable)
    later = SparkConnectGrpcException("[TABLE_OR_VIEW_NOT_FOUND] The table or view `t` cannot be found.")
    later.__context__ = RpcError("an earlier call, retried and handled")  # raised while handling it
    assert not isinstance(translate(later), ServerUnreachable)
    assert translate(later).message == "The table or view `t` cannot be found"


def test_python_code_that_failed_on_the_server_is_named_by_what_it_raised():
    class PythonException(Exception):  # pyspark's, whose first line says only to see the stack trace below
        pass

    text = ("\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
            "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most recent call last):\n"
            '  File "/srv/sparkscope/client/kafka/source.py", line 210, in read\n'
            "    for message in _messages(piece, options):\n"
            "sparkscope.client.kafka.source.KafkaDataLossError: Some data may have been lost: partition topic1-0 "
            "ended at offset 28, before the batch's end 50. Set the source option failOnDataLoss to false to go on "
            "from the earliest offsets\n SQLSTATE: 38000\n")
    error = translate(PythonException(text))
    assert error.message == ("KafkaDataLossError: Some data may have been lost: partition topic1-0 ended at offset "
                             "28, before the batch's end 50. Set the source option failOnDataLoss to false to go on "
                             "from the earliest offsets")


# -- errors known by their structure: Spark's condition first, its words only where it names none ------------------
def _analysis(text: str):
    from pyspark.errors import AnalysisException

    return AnalysisException(message=text)


def test_a_missing_data_source_is_known_by_its_condition():
    from sparkscope.client.error_reading import missing_data_source

    assert missing_data_source(_analysis(  # Spark 4.3's words, from a server without the Kafka connector
        "[KAFKA_DATA_SOURCE_NOT_ENABLED] Failed to find data source: kafka. Please deploy the application as per the "
        "deployment section of Structured Streaming + Kafka Integration Guide. SQLSTATE: 42K02"))
    from pyspark.errors.exceptions.connect import AnalysisException

    assert missing_data_source(AnalysisException(  # Spark 4.0's: a legacy condition, named outside the words
        message="Failed to find data source: kafka. Please deploy the application as per the deployment section of "
                "Structured Streaming + Kafka Integration Guide.", errorClass="_LEGACY_ERROR_TEMP_1140"))
    assert missing_data_source(_analysis(  # any other name
        "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: nosuch. Make sure the provider name is correct and "
        "the package is properly registered and compatible with your Spark version. SQLSTATE: 42K02"))
    assert not missing_data_source(_analysis("[TABLE_OR_VIEW_NOT_FOUND] The table or view `kafka` cannot be found."))
    assert missing_data_source(ValueError("Failed to find data source: kafka"))  # words, where no condition is named


def test_a_state_reader_s_failure_says_whether_the_checkpoint_is_gone_or_kept_no_changelog():
    from sparkscope.client.error_reading import state_unreadable

    assert state_unreadable(_analysis(
        "[STDS_COMMITTED_BATCH_UNAVAILABLE] No committed batch found, checkpoint location: /tmp/cp. Ensure that the "
        "query has run and committed any microbatch before stopping. SQLSTATE: KD006")) == "gone"
    assert state_unreadable(_analysis("[PATH_NOT_FOUND] Path does not exist: file:/tmp/cp. SQLSTATE: 42K03")) == "gone"
    assert state_unreadable(_analysis(
        "[CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE] Error reading streaming state file of "
        "file:/tmp/cp/state/0/1/2.changelog does not exist. If the stream job is restarted with a new or updated "
        "state operation, please create a new checkpoint location or clear the existing checkpoint location. "
        "SQLSTATE: 58030")) == "no_changelog"
    assert state_unreadable(_analysis("[UNRESOLVED_COLUMN] A column cannot be resolved.")) is None


def test_a_probe_of_the_server_s_python_says_what_stopped_it():
    from sparkscope.client.error_reading import python_probe_failure

    assert python_probe_failure("[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.12 than that in "
                                "driver: 3.11, PySpark cannot run with different minor versions.") == (
        "3.12", "another minor version")
    assert python_probe_failure("org.apache.spark.SparkException: Python worker failed to connect back.")[1] == (
        "its Python worker did not start in time: the server may be overloaded, or PYSPARK_PYTHON is wrong")


def test_an_embedded_server_s_out_of_memory_exit_explains_only_its_own_port():
    import grpc

    from sparkscope.client.errors import ServerOutOfMemory, ServerUnreachable
    from sparkscope.client.error_causes import explain_unreachable

    class Refused(grpc.RpcError):
        def __init__(self, port: int):
            super().__init__(f"failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:{port}: "
                             "Failed to connect to remote host: Connection refused")

        def code(self):
            from types import SimpleNamespace

            return SimpleNamespace(name="UNAVAILABLE")

    stop = explain_unreachable(15002, lambda: ServerOutOfMemory("The Spark server ran out of memory (Java heap space)"))
    try:
        assert isinstance(translate(Refused(15002)), ServerOutOfMemory)
        assert isinstance(translate(Refused(16099)), ServerUnreachable)  # another server's failure: not explained
    finally:
        stop()
    assert isinstance(translate(Refused(15002)), ServerUnreachable)


def test_a_peer_that_answers_but_not_in_http2_is_known_from_grpc_s_words():
    from sparkscope.client.error_reading import answered_not_grpc, certificate_untrusted

    # gRPC 1.7x's details for `python3 -m http.server` behind sc://localhost:P
    assert answered_not_grpc("failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:18777: "
                             "Failed parsing HTTP/2 (Expected SETTINGS frame as the first frame, got frame type 79)")
    assert not answered_not_grpc("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Failed "
                                 "to connect to remote host: Connection refused")
    assert certificate_untrusted("Handshake failed with error SSL_ERROR_SSL: error:1000007d:SSL routines:"
                                 "OPENSSL_internal:CERTIFICATE_VERIFY_FAILED")


@pytest.mark.parametrize("words", [
    "failed to connect to all addresses; last error: UNKNOWN: ipv6:%5B::1%5D:29125: Failed to connect to remote host",
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:29125: Failed to connect to remote host",
])
def test_an_unreachable_server_is_explained_by_the_finder_of_its_port_whichever_address_grpc_names(words):
    """localhost is ::1 and 127.0.0.1: gRPC names whichever it tried last."""
    from sparkscope.client.errors import ServerOutOfMemory
    from sparkscope.client.error_reading import unreachable_cause
    from sparkscope.client.error_causes import explain_unreachable

    said = ServerOutOfMemory("The Spark server ran out of memory (Java heap space) and exited")
    forget = explain_unreachable(29125, lambda: said)
    try:
        assert unreachable_cause(ValueError(words)) is said
        assert unreachable_cause(ValueError(words.replace("29125", "29126"))) is None
    finally:
        forget()


def test_the_callers_own_type_and_value_errors_pass_through_unchanged():
    from pyspark.sql.connect.functions import when

    from sparkscope.client.error_reading import call

    with pytest.raises(ValueError, match="invalid literal for int") as raised:
        call(int, "ten")
    assert type(raised.value) is ValueError
    with pytest.raises(TypeError, match="has no len") as raised:
        call(len, 5)
    assert type(raised.value) is TypeError
    with pytest.raises(TypeError, match=r"\[NOT_EXPECTED_TYPE\] Argument `condition` should be Column, got int") \
            as raised:
        call(when, 5, 1)  # pyspark's own check of the caller's argument: a PySparkTypeError, still a TypeError
    assert type(raised.value).__name__ == "PySparkTypeError"


def test_a_failure_that_is_not_the_callers_own_argument_is_translated():
    from sparkscope.client.errors import SparkscopeError
    from sparkscope.client.error_reading import call

    def broken():
        raise RuntimeError("the server said no")

    with pytest.raises(SparkscopeError, match="the server said no") as raised:
        call(broken)
    assert isinstance(raised.value.__cause__, RuntimeError)


def test_import_sparkscope_loads_no_pyspark_and_pyspark_s_except_still_catches_ours():
    """pyspark takes a fifth of a second to import: `import sparkscope` (and the REPL's prompt) must not wait for it.
    The three errors that are pyspark's too are made when first asked for, once."""
    import subprocess
    import sys

    code = ("import sys, sparkscope\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))\n"
            "from pyspark.errors import AnalysisException, StreamingQueryException\n"
            "from sparkscope import AnalysisError, QueryFailed, UnsupportedOperation\n"
            "from sparkscope.client import errors\n"
            "assert errors.AnalysisError is AnalysisError and sparkscope.AnalysisError is AnalysisError\n"
            "try:\n"
            "    raise UnsupportedOperation('not on a stream', 'use a batch', 'UNSUPPORTED')\n"
            "except AnalysisException as caught:\n"
            "    print(type(caught).__name__, caught.getCondition(), str(caught))\n"
            "print(issubclass(QueryFailed, StreamingQueryException), AnalysisError.__module__, AnalysisError.code)\n")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["[]", "UnsupportedOperation UNSUPPORTED not on a stream. use a batch.",
                                       "True sparkscope.client.errors analysis"]
