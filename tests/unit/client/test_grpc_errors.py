"""Raw gRPC failures, as pyspark passes them on, become one line each. The failures are real: a tiny
in-process gRPC server on 127.0.0.1 ends a streaming call with each status, the way a sick Spark
Connect server (out of memory, overloaded) does."""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
import pytest

from sparkscope.client.errors import Cancelled, DeadlineExceeded, ServerOutOfMemory
from sparkscope.client.error_reading import translate
from sparkscope.core.hints import repl_text

METHOD = "/spark.connect.SparkConnectService/ExecutePlan"


class Failing(grpc.GenericRpcHandler):
    def service(self, details):
        code_name, _, message = details.method.rsplit("/", 1)[-1].partition(":")

        def stream(request, context):
            if code_name == "SLOW":  # answers after the client's deadline
                threading.Event().wait(2)
                yield b""
                return
            context.abort(getattr(grpc.StatusCode, code_name), message)
            yield b""  # pragma: no cover

        return grpc.unary_stream_rpc_method_handler(stream)


@pytest.fixture(scope="module")
def channel():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((Failing(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as chan:
        yield chan
    server.stop(0)


def failure(channel, code: str, message: str = "", timeout: float | None = None) -> Exception:
    call = channel.unary_stream(f"/x/{code}:{message}", request_serializer=lambda b: b,
                                response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError) as err:
        list(call(b"", timeout=timeout))
    assert type(err.value).__name__ == "_MultiThreadedRendezvous"  # what pyspark's iterators raise
    return err.value


def test_an_out_of_memory_server_is_one_line_that_says_what_to_do(channel):
    error = translate(failure(channel, "UNKNOWN", "java.lang.OutOfMemoryError: Java heap space"))
    assert isinstance(error, ServerOutOfMemory)
    assert str(error) == ("The Spark server ran out of memory (Java heap space). ss.kept() lists what sparkscope "
                          "keeps in the server's memory, and a query of sink='memory' keeps every row; a call that "
                          "collects a large result needs it all at once. Stop what holds most, or give the server "
                          "more memory: sparkscope.LocalServer().start(driver_memory='8g') after stopping it.")
    assert repl_text(error).startswith("The Spark server ran out of memory (Java heap space). :kept lists what "
                                       "sparkscope keeps in the server's memory,")


def test_unknown_is_one_line_pointing_at_the_log(channel):
    error = translate(failure(channel, "UNKNOWN", "boom"))
    assert str(error) == ("The server failed the call without saying why (boom). Its log says more "
                          "(LocalServer().log_lines(), for the embedded server); a server that ran out of memory "
                          "ends calls this way.")
    assert repl_text(error).endswith("Its log says more (sparkscope server logs, for the embedded server); a server "
                                     "that ran out of memory ends calls this way.")
    assert "_MultiThreadedRendezvous" not in str(error) and "\n" not in str(error)


def test_resource_exhausted_is_one_line(channel):
    error = translate(failure(channel, "RESOURCE_EXHAUSTED", "Received message larger than max (200 vs. 100)"))
    assert str(error) == ("The server refused the call as too large or out of resources (Received message larger "
                          "than max (200 vs. 100)). Ask for fewer rows (a smaller limit), or raise the server's "
                          "spark.connect.grpc.maxInboundMessageSize.")


def test_deadline_exceeded_is_one_line(channel):
    error = translate(failure(channel, "SLOW", timeout=0.2))
    assert isinstance(error, DeadlineExceeded)
    assert str(error) == ("The server did not answer within the call's deadline. The server or the network may be "
                          "overloaded; try again, or check the server's log.")


def test_cancelled_is_cancelled(channel):
    assert isinstance(translate(failure(channel, "CANCELLED", "by the server")), Cancelled)


def test_a_cut_connection_is_retried_a_few_times_and_a_lost_server_given_up_in_seconds(channel):
    """The policy every sparkscope session runs with. pyspark's base RetryPolicy retries nothing: a call
    that met a connection the network had just cut ("Stream removed", UNAVAILABLE) failed at once."""
    from pyspark.sql.connect.client.retries import RetryPolicyState

    from sparkscope.client.session import RETRIES, retry_policies

    [policy] = retry_policies()
    assert policy.can_retry(failure(channel, "UNAVAILABLE", "Stream removed"))
    assert not policy.can_retry(failure(channel, "INVALID_ARGUMENT", "bad plan"))
    state = RetryPolicyState(policy)
    waits = []
    while (wait := state.next_attempt()) is not None:
        waits.append(wait)
    assert len(waits) == RETRIES
    assert sum(waits) / 1000 <= 2.0  # a server that is gone is said within seconds, not minutes


def test_out_of_memory_is_the_server_s_own_failure_never_words_in_python_code_or_a_name():
    """Known by its structure: the JVM's java.lang.OutOfMemoryError; not a UDF's own exception that says
    OutOfMemoryError, nor an analysis error about a column named so."""
    from pyspark.errors import AnalysisException, PythonException

    from sparkscope.client.errors import AnalysisError

    udf = PythonException("An exception was thrown from the Python worker. Please see the stack trace below.\n"
                          "Traceback (most recent call last):\n  File \"<stdin>\", line 3, in f\n"
                          "RuntimeError: OutOfMemoryError: simulated by the test\n")
    assert not isinstance(translate(udf), ServerOutOfMemory)
    assert str(translate(udf)) == "RuntimeError: OutOfMemoryError: simulated by the test."
    column = AnalysisException("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with "
                               "name `OutOfMemoryError` cannot be resolved. SQLSTATE: 42703",
                               "UNRESOLVED_COLUMN.WITH_SUGGESTION", {"objectName": "`OutOfMemoryError`"})
    assert isinstance(translate(column), AnalysisError) and not isinstance(translate(column), ServerOutOfMemory)
    jvm = AnalysisException("Job aborted: java.lang.OutOfMemoryError: Java heap space", "INTERNAL_ERROR", {})
    assert isinstance(translate(jvm), ServerOutOfMemory)
