"""RPC deadlines through gRPC itself (client/connection/deadlines.py), against a real gRPC server in this process that
never answers: the call ends at its deadline in the calling thread, with no thread left behind."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from sparkscope.client.connection.deadlines import DeadlineInterceptor, answered_within, rpc_deadline, seconds_left
from sparkscope.client.errors import DeadlineExceeded


@pytest.fixture
def hanging_server():
    """A gRPC server whose one method answers only when the test releases it, and one that fails at once."""
    release = threading.Event()

    def hang(request: bytes, context: grpc.ServicerContext) -> bytes:
        release.wait(120)
        return b"late"

    def refuse(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.PERMISSION_DENIED, "not yours")

    server = grpc.server(ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Server", {
        "Hang": grpc.unary_unary_rpc_method_handler(hang),
        "Refuse": grpc.unary_unary_rpc_method_handler(refuse)}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.intercept_channel(grpc.insecure_channel(f"127.0.0.1:{port}"), DeadlineInterceptor())
    yield channel, release
    release.set()
    channel.close()
    server.stop(grace=None)


def test_an_rpc_under_a_deadline_ends_at_it_in_the_calling_thread(hanging_server):
    channel, _ = hanging_server
    hang = channel.unary_unary("/test.Server/Hang")
    threads_before = {thread.ident for thread in threading.enumerate()}
    with pytest.raises(DeadlineExceeded) as caught:
        answered_within(0.5, lambda: hang(b"x"), "asking the hanging server")
    assert str(caught.value) == ("Asking the hanging server got no answer within 0.5 s. The server or the network is "
                                 "not responding.")
    assert caught.value.__cause__.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # gRPC ended it, not a waiting thread
    made_here = [thread.name for thread in threading.enumerate()
                 if thread.ident not in threads_before and not thread.name.startswith("ThreadPoolExecutor")]
    assert made_here == []  # the server's own pool answers the call; this side started no thread for it


def test_an_error_before_the_deadline_is_the_error_itself(hanging_server):
    channel, _ = hanging_server
    refuse = channel.unary_unary("/test.Server/Refuse")
    with pytest.raises(grpc.RpcError) as caught:
        answered_within(30, lambda: refuse(b"x"), "asking the refusing server")
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_an_rpc_outside_a_deadline_waits_for_its_answer(hanging_server):
    channel, release = hanging_server
    hang = channel.unary_unary("/test.Server/Hang")
    answer = []
    caller = threading.Thread(target=lambda: answer.append(hang(b"x")))
    caller.start()
    with pytest.raises(DeadlineExceeded):  # a second call, under a deadline, while the first may wait
        answered_within(0.3, lambda: hang(b"y"), "the second call")
    release.set()
    caller.join(60)
    assert answer == [b"late"]  # the other thread's call had no deadline: it got the answer


def test_an_inner_deadline_never_outlasts_the_outer_one():
    with rpc_deadline(1.0) as outer:
        with rpc_deadline(60.0) as inner:
            assert inner == outer
            left = seconds_left()
            assert left is not None and left <= 1.0
        with rpc_deadline(0.1) as shorter:
            assert shorter < outer
        assert seconds_left() is not None
    assert seconds_left() is None


def test_a_call_made_once_the_deadline_passed_fails_at_once_instead_of_waiting(hanging_server):
    channel, _ = hanging_server
    hang = channel.unary_unary("/test.Server/Hang")
    with rpc_deadline(0), pytest.raises(grpc.RpcError) as caught:  # nothing left: gRPC's smallest timeout, not none
        hang(b"x")
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
